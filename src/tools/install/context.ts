import type { LogFn } from './progress.js';

/** What every component installer needs: where the cache is and where progress goes. */
export interface InstallContext {
  cacheRoot: string;
  log: LogFn;
}
