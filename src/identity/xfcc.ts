// The x-forwarded-client-cert header Envoy writes with
// forward_client_cert_details SANITIZE_SET and set_current_client_cert_details
// {cert: true}: exactly one element, `Hash=<hex sha256 of DER>;Cert="<URL-encoded PEM>"`
// (and By=... when the listener's own certificate has a URI SAN). Envoy
// drops any XFCC a client sends, so the header is Envoy's own statement about
// the verified TLS peer.

import { createHash, X509Certificate } from 'node:crypto';

export class XfccError extends Error {}

/** Key/value pairs of the single XFCC element (keys lowercased). */
export type XfccElement = Map<string, string>;

/**
 * Parses an XFCC value into its elements. Elements are separated by `,`,
 * pairs by `;`, key from value by `=`; a value may be double-quoted with `\"`
 * and `\\` escapes, inside which the separators are literal.
 */
export function parseXfcc(header: string): XfccElement[] {
  const elements: XfccElement[] = [];
  let element: XfccElement = new Map();
  let i = 0;
  const n = header.length;
  const finishElement = (): void => {
    if (element.size === 0) throw new XfccError('empty element');
    elements.push(element);
    element = new Map();
  };
  while (i < n) {
    const eq = header.indexOf('=', i);
    if (eq === -1) throw new XfccError('a pair without "="');
    const key = header.slice(i, eq).trim().toLowerCase();
    if (key === '' || /[,;"]/.test(key)) throw new XfccError('malformed key');
    i = eq + 1;
    let value = '';
    if (header[i] === '"') {
      i++;
      let closed = false;
      while (i < n) {
        const c = header[i];
        if (c === '\\' && i + 1 < n) {
          value += header[i + 1];
          i += 2;
        } else if (c === '"') {
          closed = true;
          i++;
          break;
        } else {
          value += c;
          i++;
        }
      }
      if (!closed) throw new XfccError('unterminated quoted value');
    } else {
      while (i < n && header[i] !== ';' && header[i] !== ',') value += header[i++];
      value = value.trim();
      if (value.includes('"')) throw new XfccError('stray quote');
    }
    if (element.has(key)) throw new XfccError(`duplicate key ${key}`);
    element.set(key, value);
    // Separator after a pair: ';' (next pair), ',' (next element) or the end.
    while (i < n && header[i] === ' ') i++;
    if (i >= n) break;
    if (header[i] === ';') {
      i++;
    } else if (header[i] === ',') {
      i++;
      finishElement();
    } else {
      throw new XfccError('unexpected character after a value');
    }
    while (i < n && header[i] === ' ') i++;
  }
  finishElement();
  return elements;
}

/** The client certificate (PEM) and its claimed hash from an XFCC value Envoy set. */
export function xfccCertificate(header: string): { pem: string; hash?: string } {
  const elements = parseXfcc(header);
  // SANITIZE_SET writes exactly one element: more means someone else wrote it.
  if (elements.length !== 1) throw new XfccError(`expected one element, found ${elements.length}`);
  const element = elements[0] as XfccElement;
  const encoded = element.get('cert');
  if (encoded === undefined || encoded === '') throw new XfccError('no Cert in the element');
  let pem: string;
  try {
    pem = decodeURIComponent(encoded);
  } catch {
    throw new XfccError('Cert is not URL-encoded');
  }
  const hash = element.get('hash');
  return hash === undefined ? { pem } : { pem, hash };
}

/** The XFCC value Envoy writes for a verified client certificate (Hash and Cert). */
export function formatXfcc(certPem: string): string {
  const hash = createHash('sha256').update(new X509Certificate(certPem).raw).digest('hex');
  return `Hash=${hash};Cert="${encodeURIComponent(certPem)}"`;
}
