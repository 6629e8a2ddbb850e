// ASN.1 string values as Go's parseASN1String reads them (UTF8String,
// PrintableString, IA5String, NumericString, T61String, BMPString): checked
// as Go checks them and decoded to UTF-8 (managed ArrayBuffers).
import { TAG_BMP_STRING, TAG_IA5_STRING, TAG_NUMERIC_STRING, TAG_PRINTABLE_STRING, TAG_T61_STRING, TAG_UTF8_STRING } from "./der";

/** Why the last decodeString returned null. */
export let stringError: string = "";

/** Go's utf8.Valid: shortest forms only, no surrogates, at most U+10FFFF. */
function validUtf8(start: usize, end: usize): bool {
  let p = start;
  while (p < end) {
    const b0 = <u32>load<u8>(p);
    if (b0 < 0x80) {
      p++;
      continue;
    }
    let need: usize;
    let lo: u32 = 0x80;
    let hi: u32 = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) need = 1;
    else if (b0 >= 0xe0 && b0 <= 0xef) {
      need = 2;
      if (b0 == 0xe0) lo = 0xa0;
      else if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      need = 3;
      if (b0 == 0xf0) lo = 0x90;
      else if (b0 == 0xf4) hi = 0x8f;
    } else return false;
    if (end - p <= need) return false;
    const b1 = <u32>load<u8>(p + 1);
    if (b1 < lo || b1 > hi) return false;
    for (let i: usize = 2; i <= need; i++) {
      const b = <u32>load<u8>(p + i);
      if (b < 0x80 || b > 0xbf) return false;
    }
    p += need + 1;
  }
  return true;
}

function copyBytes(start: usize, end: usize): ArrayBuffer {
  const out = new ArrayBuffer(<i32>(end - start));
  memory.copy(changetype<usize>(out), start, end - start);
  return out;
}

function isPrintable(b: u32): bool {
  return (
    (b >= 0x61 && b <= 0x7a) || // a-z
    (b >= 0x41 && b <= 0x5a) || // A-Z
    (b >= 0x30 && b <= 0x39) || // 0-9
    (b >= 0x27 && b <= 0x29) || // ' ( )
    (b >= 0x2b && b <= 0x2f) || // + , - . /
    b == 0x20 || b == 0x3a || b == 0x3d || b == 0x3f || // space : = ?
    b == 0x2a || b == 0x26 // * and &, which Go tolerates (seen in the wild)
  );
}

/** The value at [start, end) with string tag `tag`, as UTF-8; null (stringError set) if Go would refuse it. */
export function decodeString(tag: i32, start: usize, end: usize): ArrayBuffer | null {
  switch (tag) {
    case TAG_UTF8_STRING: {
      if (!validUtf8(start, end)) {
        stringError = "invalid UTF8String in a name";
        return null;
      }
      return copyBytes(start, end);
    }
    case TAG_PRINTABLE_STRING: {
      for (let p = start; p < end; p++) {
        if (!isPrintable(<u32>load<u8>(p))) {
          stringError = "invalid PrintableString in a name";
          return null;
        }
      }
      return copyBytes(start, end);
    }
    case TAG_IA5_STRING: {
      for (let p = start; p < end; p++) {
        if (load<u8>(p) >= 0x80) {
          stringError = "invalid IA5String in a name";
          return null;
        }
      }
      return copyBytes(start, end);
    }
    case TAG_NUMERIC_STRING: {
      for (let p = start; p < end; p++) {
        const b = load<u8>(p);
        if (!(b == 0x20 || (b >= 0x30 && b <= 0x39))) {
          stringError = "invalid NumericString in a name";
          return null;
        }
      }
      return copyBytes(start, end);
    }
    case TAG_T61_STRING: {
      // Go reads T.61 as ISO 8859-1: each byte is the code point.
      let size: usize = 0;
      for (let p = start; p < end; p++) size += load<u8>(p) < 0x80 ? 1 : 2;
      const out = new ArrayBuffer(<i32>size);
      let q = changetype<usize>(out);
      for (let p = start; p < end; p++) {
        const b = <u32>load<u8>(p);
        if (b < 0x80) {
          store<u8>(q++, <u8>b);
        } else {
          store<u8>(q++, <u8>(0xc0 | (b >> 6)));
          store<u8>(q++, <u8>(0x80 | (b & 0x3f)));
        }
      }
      return out;
    }
    case TAG_BMP_STRING: {
      // UCS-2 big-endian; one trailing NUL removed; surrogates and the
      // permanent noncharacters refused (as Go and BoringSSL do).
      if ((end - start) & 1) {
        stringError = "invalid BMPString in a name";
        return null;
      }
      if (end - start >= 2 && load<u8>(end - 1) == 0 && load<u8>(end - 2) == 0) end -= 2;
      let size: usize = 0;
      for (let p = start; p < end; p += 2) {
        const u = (<u32>load<u8>(p) << 8) | <u32>load<u8>(p + 1);
        if (u == 0xfffe || u == 0xffff || (u >= 0xfdd0 && u <= 0xfdef) || (u >= 0xd800 && u <= 0xdfff)) {
          stringError = "invalid BMPString in a name";
          return null;
        }
        size += u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
      }
      const out = new ArrayBuffer(<i32>size);
      let q = changetype<usize>(out);
      for (let p = start; p < end; p += 2) {
        const u = (<u32>load<u8>(p) << 8) | <u32>load<u8>(p + 1);
        if (u < 0x80) {
          store<u8>(q++, <u8>u);
        } else if (u < 0x800) {
          store<u8>(q++, <u8>(0xc0 | (u >> 6)));
          store<u8>(q++, <u8>(0x80 | (u & 0x3f)));
        } else {
          store<u8>(q++, <u8>(0xe0 | (u >> 12)));
          store<u8>(q++, <u8>(0x80 | ((u >> 6) & 0x3f)));
          store<u8>(q++, <u8>(0x80 | (u & 0x3f)));
        }
      }
      return out;
    }
    default:
      stringError = "unsupported string type in a name";
      return null;
  }
}
