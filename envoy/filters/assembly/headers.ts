// Request header names the filter looks for: the identity headers it strips
// (x-remote-* and the configured ones) and x-forwarded-client-cert and
// authorization, compared ASCII case-insensitively in linear memory.
import { Config } from "./config";

const X_REMOTE = "x-remote-";
const XFCC = "x-forwarded-client-cert";
const AUTHORIZATION = "authorization";

/** Whether the name at [p, p + n) starts with the ASCII-lowercase `prefix` (case-insensitive). */
function startsWithCI(p: usize, n: usize, prefix: usize, prefixLen: usize): bool {
  if (n < prefixLen) return false;
  for (let i: usize = 0; i < prefixLen; i++) {
    let c = <u32>load<u8>(p + i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c != <u32>load<u8>(prefix + i)) return false;
  }
  return true;
}

export function equalsCI(p: usize, n: usize, name: usize, nameLen: usize): bool {
  return n == nameLen && startsWithCI(p, n, name, nameLen);
}

const X_REMOTE_BYTES = String.UTF8.encode(X_REMOTE);
export const XFCC_BYTES = String.UTF8.encode(XFCC);
export const AUTHORIZATION_BYTES = String.UTF8.encode(AUTHORIZATION);

export function isStripped(p: usize, n: usize, config: Config): bool {
  return (
    startsWithCI(p, n, changetype<usize>(X_REMOTE_BYTES), X_REMOTE_BYTES.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.userHeader), config.userHeader.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.uidHeader), config.uidHeader.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.groupHeader), config.groupHeader.byteLength) ||
    startsWithCI(p, n, changetype<usize>(config.extraHeaderPrefix), config.extraHeaderPrefix.byteLength)
  );
}
