// Replacing a file so that readers, and a crash, see the old content or the
// new one, never a truncated file that looks present: write a temp sibling
// (same directory, so same filesystem and rename is atomic), flush it to disk,
// rename it over the file, flush the directory entry.
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface AtomicWriteOptions {
  /**
   * Exact permission bits of the file, whatever the umask (e.g. 0o600 for
   * keys and tokens). Default: what a new file gets, 0o666 minus the umask.
   */
  mode?: number;
}

const TEMP_PREFIX = '.tmp-';

/**
 * A new name for a temp sibling of `file`: `.tmp-<name>-<random>-<pid>`, unique
 * within the process and across processes; tempOwnerPid reads the pid back.
 */
export function tempSiblingPath(file: string, pid: number = process.pid): string {
  return path.join(path.dirname(file), `${TEMP_PREFIX}${path.basename(file)}-${randomBytes(4).toString('hex')}-${pid}`);
}

/** The pid that owns a temp entry named by tempSiblingPath, if `name` is one. */
export function tempOwnerPid(name: string): number | undefined {
  if (!name.startsWith(TEMP_PREFIX)) return undefined;
  const m = /-(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * Replaces `file` (in an existing directory) with `data` atomically; on
 * failure the temp file is removed. Synchronous: the file is in place when it
 * returns, so callers that must not yield (a flush on stop) and async callers
 * (the files are small: a state file, a key, a marker) share this one way.
 */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  const tmp = tempSiblingPath(file);
  let fd: number | undefined;
  try {
    // 'wx': a fresh file, so the mode applies and no leftover is reused.
    fd = openSync(tmp, 'wx', opts.mode ?? 0o666);
    writeFileSync(fd, data);
    // The mode given to open is filtered by the umask: set it exactly.
    if (opts.mode !== undefined) fchmodSync(fd, opts.mode);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, file);
  } catch (err) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // already failing: the first error is the one to report
      }
    }
    rmSync(tmp, { force: true });
    throw err;
  }
  syncDirectory(path.dirname(file));
}

/**
 * Make the rename itself durable. Best effort: the new content is already in
 * place, and some platforms and filesystems cannot fsync a directory.
 */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // not supported here: the file is written, only its durability across a power loss is weaker
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
