// One pino logger per process: quiet by default (warn), JSON to stderr.
// MVPROXY_LOG_LEVEL=info|debug raises it. Never log secrets, tokens or keys.
// The only module of src/ that imports pino: others take Logger and loggers from here.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, level = process.env['MVPROXY_LOG_LEVEL'] ?? 'warn'): Logger {
  return pino({ name, level }, pino.destination(2));
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
