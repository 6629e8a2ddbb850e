// Plugin configuration: a flat JSON object of strings, every key optional
// (these mirror kube-apiserver's --requestheader-*-headers flags):
//   {"userHeader":"x-remote-user","uidHeader":"x-remote-uid",
//    "groupHeader":"x-remote-group","extraHeaderPrefix":"x-remote-extra-"}
// Empty configuration: the defaults. An unknown or repeated key, a
// non-string value, a value that is not an HTTP header name (token), or
// malformed JSON is refused (proxy_on_configure returns false and Envoy
// NACKs the configuration). Values are lowercased.

/** The extra key upstream's x509 authenticator sets, escaped as the request-header authenticator unescapes it. */
const CREDENTIAL_ID_KEY = "authentication.kubernetes.io%2fcredential-id";

export class Config {
  userHeader: ArrayBuffer;
  uidHeader: ArrayBuffer;
  groupHeader: ArrayBuffer;
  extraHeaderPrefix: ArrayBuffer;
  /** extraHeaderPrefix + the credential-id key. */
  credentialIdHeader: ArrayBuffer;

  constructor(user: string, uid: string, group: string, extraPrefix: string) {
    this.userHeader = String.UTF8.encode(user);
    this.uidHeader = String.UTF8.encode(uid);
    this.groupHeader = String.UTF8.encode(group);
    this.extraHeaderPrefix = String.UTF8.encode(extraPrefix);
    this.credentialIdHeader = String.UTF8.encode(extraPrefix + CREDENTIAL_ID_KEY);
  }
}

export function defaultConfig(): Config {
  return new Config("x-remote-user", "x-remote-uid", "x-remote-group", "x-remote-extra-");
}

export let configError: string = "";

// A tiny strict JSON reader over a span of memory.
let at: usize = 0;
let end: usize = 0;

function skipWs(): void {
  while (at < end) {
    const c = load<u8>(at);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    at++;
  }
}

/** Reads a JSON string at `at` (which must be `"`); null on malformed input. */
function readString(): string | null {
  if (at >= end || load<u8>(at) != 0x22) return null;
  at++;
  let s = "";
  const codes = new Array<i32>();
  while (true) {
    if (at >= end) return null;
    const c = <u32>load<u8>(at++);
    if (c == 0x22) break;
    if (c < 0x20) return null;
    if (c == 0x5c) {
      if (at >= end) return null;
      const e = <u32>load<u8>(at++);
      if (e == 0x22) codes.push(0x22);
      else if (e == 0x5c) codes.push(0x5c);
      else if (e == 0x2f) codes.push(0x2f);
      else if (e == 0x62) codes.push(0x08);
      else if (e == 0x66) codes.push(0x0c);
      else if (e == 0x6e) codes.push(0x0a);
      else if (e == 0x72) codes.push(0x0d);
      else if (e == 0x74) codes.push(0x09);
      else if (e == 0x75) {
        if (end - at < 4) return null;
        let u: i32 = 0;
        for (let i = 0; i < 4; i++) {
          const d = hex(<u32>load<u8>(at++));
          if (d < 0) return null;
          u = (u << 4) | d;
        }
        codes.push(u);
      } else return null;
    } else {
      // Raw bytes: header names are ASCII; anything else fails the token check.
      codes.push(<i32>c);
    }
  }
  for (let i = 0; i < codes.length; i++) s += String.fromCharCode(unchecked(codes[i]));
  return s;
}

function hex(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>(c - 0x30);
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return <i32>(l - 0x61 + 10);
  return -1;
}

/** RFC 9110 token characters. */
function isTokenChar(c: i32): bool {
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) return true;
  return "!#$%&'*+-.^_`|~".indexOf(String.fromCharCode(c)) >= 0;
}

function headerName(value: string): string | null {
  if (value.length == 0) return null;
  for (let i = 0; i < value.length; i++) if (!isTokenChar(value.charCodeAt(i))) return null;
  return value.toLowerCase();
}

/** Parses the configuration at [p, p + n); null (configError set) when refused. */
export function parseConfig(p: usize, n: usize): Config | null {
  configError = "";
  if (n == 0) return defaultConfig();
  at = p;
  end = p + n;
  let user: string | null = null;
  let uid: string | null = null;
  let group: string | null = null;
  let extra: string | null = null;
  skipWs();
  if (at >= end || load<u8>(at) != 0x7b) return fail("configuration is not a JSON object");
  at++;
  skipWs();
  if (at < end && load<u8>(at) == 0x7d) {
    at++;
  } else {
    while (true) {
      skipWs();
      const key = readString();
      if (key === null) return fail("malformed JSON (expected a string key)");
      skipWs();
      if (at >= end || load<u8>(at) != 0x3a) return fail("malformed JSON (expected ':')");
      at++;
      skipWs();
      const raw = readString();
      if (raw === null) return fail("the value of " + key + " is not a string");
      const value = headerName(raw);
      if (value === null) return fail("the value of " + key + " is not an HTTP header name");
      if (key == "userHeader") {
        if (user !== null) return fail("repeated key userHeader");
        user = value;
      } else if (key == "uidHeader") {
        if (uid !== null) return fail("repeated key uidHeader");
        uid = value;
      } else if (key == "groupHeader") {
        if (group !== null) return fail("repeated key groupHeader");
        group = value;
      } else if (key == "extraHeaderPrefix") {
        if (extra !== null) return fail("repeated key extraHeaderPrefix");
        extra = value;
      } else return fail("unknown key " + key);
      skipWs();
      if (at >= end) return fail("malformed JSON (unterminated object)");
      const c = load<u8>(at++);
      if (c == 0x7d) break;
      if (c != 0x2c) return fail("malformed JSON (expected ',' or '}')");
    }
  }
  skipWs();
  if (at != end) return fail("trailing characters after the JSON object");
  return new Config(
    user !== null ? user : "x-remote-user",
    uid !== null ? uid : "x-remote-uid",
    group !== null ? group : "x-remote-group",
    extra !== null ? extra : "x-remote-extra-",
  );
}

function fail(reason: string): Config | null {
  configError = reason;
  return null;
}
