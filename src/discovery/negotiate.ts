// Accept-header negotiation for `/api` and `/apis`, as kube-apiserver does it
// (apimachinery negotiation + the aggregated discovery wrapper): media ranges
// are tried in preference order (q-value, then specificity, then the order
// the client wrote them); the first one the server can produce wins. Only if
// that one asks for apidiscovery.k8s.io/v2 APIGroupDiscoveryList is the
// aggregated document served; `profile=nopeer` asks for the apiserver's own
// document, which the local apiserver answers itself.

export type DiscoveryNegotiation = { kind: 'aggregated'; format: 'json' | 'protobuf' } | { kind: 'nopeer' } | { kind: 'legacy' };

export interface MediaRange {
  type: string;
  subtype: string;
  /** Parameter names lower-cased, values unquoted; q removed. */
  params: Record<string, string>;
  q: number;
}

/** What kube-apiserver serializes discovery as (application/cbor only behind a gate; treated like yaml). */
const SERVER_MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'] as const;

export function negotiateDiscovery(accept: string | undefined): DiscoveryNegotiation {
  if (accept === undefined || accept.trim() === '') return { kind: 'legacy' };
  for (const range of preferenceOrder(parseAccept(accept))) {
    const mediaType = serverMediaTypeFor(range);
    if (mediaType === undefined) continue; // not something the apiserver writes: try the next range
    const { g, v, as } = range.params;
    if (g === undefined && v === undefined && as === undefined) return { kind: 'legacy' };
    // A conversion the discovery endpoint cannot do (anything but the v2 list,
    // v2beta1 included on current apiservers) makes the range unacceptable:
    // the next one is tried. If no range asks for v2, the request goes to the
    // local apiserver unchanged, and an older one that still serves v2beta1
    // answers it as it always did.
    if (g !== 'apidiscovery.k8s.io' || v !== 'v2' || as !== 'APIGroupDiscoveryList') continue;
    if (range.params['profile'] === 'nopeer') return { kind: 'nopeer' };
    if (mediaType === 'application/json') return { kind: 'aggregated', format: 'json' };
    if (mediaType === 'application/vnd.kubernetes.protobuf') return { kind: 'aggregated', format: 'protobuf' };
  }
  return { kind: 'legacy' };
}

/** Which serializer a media range selects: exact match, `type/*`, or `*\/*` (the first, JSON). */
function serverMediaTypeFor(range: MediaRange): (typeof SERVER_MEDIA_TYPES)[number] | undefined {
  if (range.type === '*' && range.subtype === '*') return SERVER_MEDIA_TYPES[0];
  return SERVER_MEDIA_TYPES.find((m) => {
    const [type, subtype] = m.split('/') as [string, string];
    return range.type === type && (range.subtype === subtype || range.subtype === '*');
  });
}

/** Higher q first, then more specific, otherwise as the client listed them; q=0 means "not acceptable". */
function preferenceOrder(ranges: MediaRange[]): MediaRange[] {
  const specificity = (r: MediaRange): number => (r.type === '*' ? 0 : r.subtype === '*' ? 1 : 2);
  return ranges
    .map((range, index) => ({ range, index }))
    .filter(({ range }) => range.q > 0)
    .sort((a, b) => b.range.q - a.range.q || specificity(b.range) - specificity(a.range) || a.index - b.index)
    .map(({ range }) => range);
}

/** Parse an Accept header into media ranges (RFC 9110 section 12.5.1), skipping malformed ones. */
function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of splitOutsideQuotes(header, ',')) {
    const [mediaType = '', ...paramParts] = splitOutsideQuotes(part, ';');
    const [type, subtype, extra] = mediaType.trim().toLowerCase().split('/');
    if (!type || !subtype || extra !== undefined) continue;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of paramParts) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const name = p.slice(0, eq).trim().toLowerCase();
      let value = p.slice(eq + 1).trim();
      if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
      if (name === 'q') {
        const parsed = Number(value);
        q = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 1;
      } else if (name !== '') {
        params[name] = value;
      }
    }
    ranges.push({ type, subtype, params, q });
  }
  return ranges;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted && c === '\\' && i + 1 < text.length) {
      current += c + (text[i + 1] as string);
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === separator && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts.filter((p) => p.trim() !== '');
}
