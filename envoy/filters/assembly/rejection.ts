// Refusing a request: the apiserver's 401 (a metav1.Status body), answered
// by the filter itself; unreadable XFCC values logged at powers of two.
import { ACTION_CONTINUE, ACTION_PAUSE, LOG_WARN, logString, proxy_send_local_response } from "./abi";
import { addDebt } from "./gc";

const UNAUTHORIZED_BODY = String.UTF8.encode(
  '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}',
);
const REJECT_DETAILS = String.UTF8.encode("mvproxy_client_certificate_rejected");
const REJECT_HEADERS = serializeHeaders("content-type", "application/json");

/** One header as a proxy-wasm serialized map. */
function serializeHeaders(key: string, value: string): ArrayBuffer {
  const k = String.UTF8.encode(key);
  const v = String.UTF8.encode(value);
  const out = new ArrayBuffer(12 + k.byteLength + 1 + v.byteLength + 1);
  const p = changetype<usize>(out);
  store<u32>(p, 1);
  store<u32>(p, k.byteLength, 4);
  store<u32>(p, v.byteLength, 8);
  memory.copy(p + 12, changetype<usize>(k), k.byteLength);
  store<u8>(p + 12 + k.byteLength, 0);
  memory.copy(p + 13 + k.byteLength, changetype<usize>(v), v.byteLength);
  store<u8>(p + 13 + k.byteLength + v.byteLength, 0);
  return out;
}

export function reject(): i32 {
  proxy_send_local_response(
    401,
    changetype<usize>(REJECT_DETAILS),
    REJECT_DETAILS.byteLength,
    changetype<usize>(UNAUTHORIZED_BODY),
    UNAUTHORIZED_BODY.byteLength,
    changetype<usize>(REJECT_HEADERS),
    REJECT_HEADERS.byteLength,
    -1,
  );
  return ACTION_PAUSE;
}

/** XFCC values that cannot be memoized (unreadable, Hash mismatch): logged at powers of two, never flooding. */
let unreadableCount: u64 = 0;

export function rejectUnreadable(reason: string): i32 {
  unreadableCount++;
  if ((unreadableCount & (unreadableCount - 1)) == 0) {
    logString(
      LOG_WARN,
      "mvproxy identity filter: client certificate rejected: " + reason + " (" + unreadableCount.toString() + " such requests so far)",
    );
  }
  addDebt(64);
  return reject();
}

/**
 * A certificate the apiserver's x509 authenticator refuses does not fail the
 * request there: the next authenticator reads the bearer token. So with an
 * Authorization header the request goes on without identity (the apiserver
 * answers 401 itself if the token is no good); without one, 401 here.
 */
export function refuse(bearer: bool): i32 {
  return bearer ? ACTION_CONTINUE : reject();
}
