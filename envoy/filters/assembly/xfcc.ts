// x-forwarded-client-cert, as Envoy's HTTP connection manager writes it with
// forward_client_cert_details SANITIZE_SET and
// set_current_client_cert_details {cert: true}: exactly one element,
// `Hash=<hex sha256 of DER>;Cert="<URL-encoded PEM>"`, possibly with other
// keys (By, Subject, URI, DNS, ...), which are ignored. A value may be
// double-quoted, with `\"` and `\\` escapes, and then contain `,` and `;`.
//
// Everything here works on spans of linear memory and allocates nothing:
// the tokenizer runs on every request that carries a certificate.

/** The 32-byte digest from Hash (set by scanXfcc). */
export const XFCC_DIGEST: usize = memory.data(32, 8);

export let xfccError: string = "";
/** The Cert value span (quotes excluded; escapes not yet removed). */
export let certStart: usize = 0;
export let certEnd: usize = 0;
export let certEscaped: bool = false;

function isKeyChar(b: u32): bool {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) || b == 0x2d || b == 0x5f || b == 0x2e;
}

function keyIs(start: usize, end: usize, lower: string): bool {
  // `lower` is an ASCII literal; compare case-insensitively.
  const n = <usize>lower.length;
  if (end - start != n) return false;
  for (let i: usize = 0; i < n; i++) {
    if ((<u32>load<u8>(start + i) | 0x20) != <u32>lower.charCodeAt(<i32>i)) return false;
  }
  return true;
}

export function hexValue(b: u32): i32 {
  if (b >= 0x30 && b <= 0x39) return <i32>(b - 0x30);
  const l = b | 0x20;
  if (l >= 0x61 && l <= 0x66) return <i32>(l - 0x61 + 10);
  return -1;
}

/**
 * Tokenizes the XFCC value at [p, p + n) strictly. On success the digest is
 * in XFCC_DIGEST and the Cert span in certStart/certEnd/certEscaped.
 */
export function scanXfcc(p: usize, n: usize): bool {
  const end = p + n;
  let at = p;
  let hashSeen = false;
  let certSeen = false;
  if (n == 0) return fail("empty header");
  while (true) {
    const keyStart = at;
    while (at < end && isKeyChar(<u32>load<u8>(at))) at++;
    const keyEnd = at;
    if (keyEnd == keyStart || at >= end || load<u8>(at) != 0x3d) return fail("malformed key");
    at++;
    let valueStart: usize;
    let valueEnd: usize;
    let escaped = false;
    if (at < end && load<u8>(at) == 0x22) {
      at++;
      valueStart = at;
      while (true) {
        if (at >= end) return fail("unterminated quoted value");
        const c = load<u8>(at);
        if (c == 0x5c) {
          if (end - at < 2) return fail("unterminated escape");
          escaped = true;
          at += 2;
        } else if (c == 0x22) {
          break;
        } else {
          at++;
        }
      }
      valueEnd = at;
      at++;
    } else {
      valueStart = at;
      while (at < end) {
        const c = load<u8>(at);
        if (c == 0x3b || c == 0x2c) break;
        if (c == 0x22 || c == 0x5c) return fail("quote or backslash in an unquoted value");
        at++;
      }
      valueEnd = at;
    }
    if (keyIs(keyStart, keyEnd, "hash")) {
      if (hashSeen) return fail("duplicate Hash");
      hashSeen = true;
      if (escaped || valueEnd - valueStart != 64) return fail("Hash is not 64 hex digits");
      for (let i: usize = 0; i < 32; i++) {
        const hi = hexValue(<u32>load<u8>(valueStart + 2 * i));
        const lo = hexValue(<u32>load<u8>(valueStart + 2 * i + 1));
        if (hi < 0 || lo < 0) return fail("Hash is not 64 hex digits");
        store<u8>(XFCC_DIGEST + i, <u8>((hi << 4) | lo));
      }
    } else if (keyIs(keyStart, keyEnd, "cert")) {
      if (certSeen) return fail("duplicate Cert");
      certSeen = true;
      if (valueEnd == valueStart) return fail("empty Cert");
      certStart = valueStart;
      certEnd = valueEnd;
      certEscaped = escaped;
    }
    if (at >= end) break;
    const sep = load<u8>(at);
    if (sep == 0x2c) return fail("more than one element");
    if (sep != 0x3b) return fail("unexpected character after a value");
    at++;
  }
  if (!hashSeen) return fail("no Hash");
  if (!certSeen) return fail("no Cert");
  return true;
}

function fail(reason: string): bool {
  xfccError = reason;
  return false;
}

/**
 * Removes the quoted-string escapes (if any) and the URL encoding of the
 * Cert value into `out` (room for certEnd - certStart bytes); returns the
 * decoded length, or -1 for a malformed percent escape.
 */
export function decodeCert(out: usize): isize {
  let q = out;
  let at = certStart;
  const end = certEnd;
  while (at < end) {
    let c = <u32>load<u8>(at++);
    if (c == 0x5c && certEscaped) c = <u32>load<u8>(at++); // scanXfcc checked an escape never ends the span
    if (c == 0x25) {
      if (end - at < 2) return -1;
      let b1 = <u32>load<u8>(at);
      let b2 = <u32>load<u8>(at + 1);
      // An escaped character inside a %XX would be odd; refuse it.
      const hi = hexValue(b1);
      const lo = hexValue(b2);
      if (hi < 0 || lo < 0) return -1;
      c = <u32>((hi << 4) | lo);
      at += 2;
    }
    store<u8>(q++, <u8>c);
  }
  return <isize>(q - out);
}

const PEM_BEGIN = "-----BEGIN CERTIFICATE-----";
const PEM_END = "-----END CERTIFICATE-----";

function matchAscii(at: usize, end: usize, text: string): bool {
  const n = <usize>text.length;
  if (end - at < n) return false;
  for (let i: usize = 0; i < n; i++) if (<u32>load<u8>(at + i) != <u32>text.charCodeAt(<i32>i)) return false;
  return true;
}

function isSpace(c: u32): bool {
  return c == 0x0a || c == 0x0d || c == 0x20 || c == 0x09;
}

function base64Value(c: u32): i32 {
  if (c >= 0x41 && c <= 0x5a) return <i32>(c - 0x41);
  if (c >= 0x61 && c <= 0x7a) return <i32>(c - 0x61 + 26);
  if (c >= 0x30 && c <= 0x39) return <i32>(c - 0x30 + 52);
  if (c == 0x2b) return 62;
  if (c == 0x2f) return 63;
  return -1;
}

/**
 * Decodes one PEM CERTIFICATE block at [pem, pem + len) into DER at `out`
 * (in place is fine: DER is shorter than its base64). Only whitespace may
 * surround the block. Returns the DER length, or -1.
 */
export function pemToDer(pem: usize, len: usize, out: usize): isize {
  const end = pem + len;
  let at = pem;
  if (!matchAscii(at, end, PEM_BEGIN)) return -1;
  at += <usize>PEM_BEGIN.length;
  let q = out;
  let acc: u32 = 0;
  let count: u32 = 0; // base64 symbols in the current quantum
  let padding: u32 = 0;
  while (true) {
    if (at >= end) return -1;
    const c = <u32>load<u8>(at);
    if (c == 0x2d) break; // '-': the END line
    at++;
    if (isSpace(c)) continue;
    if (c == 0x3d) {
      // '=' only in the last quantum, in positions 3 and 4.
      if (count < 2) return -1;
      padding++;
      count++;
      if (count == 4) {
        if (padding == 1) {
          store<u8>(q++, <u8>(acc >> 10));
          store<u8>(q++, <u8>(acc >> 2));
        } else {
          store<u8>(q++, <u8>(acc >> 4));
        }
        count = 0;
        acc = 0;
      }
      continue;
    }
    if (padding > 0) return -1;
    const v = base64Value(c);
    if (v < 0) return -1;
    acc = (acc << 6) | <u32>v;
    count++;
    if (count == 4) {
      store<u8>(q++, <u8>(acc >> 16));
      store<u8>(q++, <u8>(acc >> 8));
      store<u8>(q++, <u8>acc);
      count = 0;
      acc = 0;
    }
  }
  if (count != 0) return -1;
  if (!matchAscii(at, end, PEM_END)) return -1;
  at += <usize>PEM_END.length;
  while (at < end) if (!isSpace(<u32>load<u8>(at++))) return -1;
  return <isize>(q - out);
}
