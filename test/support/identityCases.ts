// The identity table every implementation layer is held to: certificates a
// real TLS stack accepts, and what kube-apiserver's x509 authenticator makes
// of each. The compiled filter runs it in Node (test/unit/envoy/identityFilterTable.test.ts)
// and a real Envoy end to end (test/e2e/identity-envoy.test.ts); the other
// identityFilter*.test.ts files check the filter's rules one behaviour per test.
import type { LeafOptions } from './clientCerts.js';

/** What the apiserver receives: an identity, none (unauthenticated by x509), or the filter's 401. */
export type IdentityOutcome = { kind: 'rejected' } | { kind: 'none' } | { kind: 'identity'; user: string; groups: string[]; uid?: string };

export interface IdentityCase {
  name: string;
  /** The leaf, signed by the client CA (usages default to client authentication). */
  leaf: LeafOptions;
  expected: IdentityOutcome;
  /** Envoy itself refuses the certificate at the TLS handshake (before the filter could). */
  refusedAtHandshake?: true;
}

const HOUR = 3_600_000;

export const IDENTITY_CASES: readonly IdentityCase[] = [
  {
    name: 'CN is the user, every O a group in certificate order',
    leaf: { name: [{ O: ['system:masters'] }, { O: ['team-a'] }, { CN: ['alice'] }] },
    expected: { kind: 'identity', user: 'alice', groups: ['system:masters', 'team-a'] },
  },
  { name: 'no O: no groups', leaf: { name: [{ CN: ['bob'] }] }, expected: { kind: 'identity', user: 'bob', groups: [] } },
  {
    name: 'several O, duplicates kept',
    leaf: { name: [{ O: ['z'] }, { O: ['a'] }, { CN: ['u'] }, { O: ['m'] }, { O: ['a'] }] },
    expected: { kind: 'identity', user: 'u', groups: ['z', 'a', 'm', 'a'] },
  },
  {
    name: 'escaped characters in DN values come through verbatim',
    leaf: { name: 'O=team\\, a\\+b=c,O=\\"quoted\\",CN=x\\,y\\+z' },
    expected: { kind: 'identity', user: 'x,y+z', groups: ['team, a+b=c', '"quoted"'] },
  },
  {
    name: 'several CNs: the last is the user',
    leaf: { name: [{ CN: ['first'] }, { CN: ['last'] }] },
    expected: { kind: 'identity', user: 'last', groups: [] },
  },
  {
    name: 'UTF-8 names are kept',
    leaf: { name: [{ O: ['équipe'] }, { O: ['チーム'] }, { CN: ['zoë 🙂'] }] },
    expected: { kind: 'identity', user: 'zoë 🙂', groups: ['équipe', 'チーム'] },
  },
  {
    name: 'PrintableString, IA5String and BMPString values',
    leaf: { name: [{ O: [{ printableString: 'printable' }] }, { O: [{ bmpString: 'bmp é€' }] }, { CN: [{ ia5String: 'ia5' }] }] },
    expected: { kind: 'identity', user: 'ia5', groups: ['printable', 'bmp é€'] },
  },
  { name: 'UID attribute', leaf: { name: [{ CN: ['carol'] }], uid: ['c-123'] }, expected: { kind: 'identity', user: 'carol', groups: [], uid: 'c-123' } },
  { name: 'two UID attributes: refused', leaf: { name: [{ CN: ['dave'] }], uid: ['1', '2'] }, expected: { kind: 'rejected' } },
  { name: 'no CN: no identity', leaf: { name: [{ O: ['system:masters'] }] }, expected: { kind: 'none' } },
  { name: 'a control character in a group: refused', leaf: { name: [{ O: ['a\nCN=evil'] }, { CN: ['eve'] }] }, expected: { kind: 'rejected' } },
  { name: 'surrounding whitespace in a group: refused', leaf: { name: [{ O: [' system:masters'] }, { CN: ['eve'] }] }, expected: { kind: 'rejected' } },
  {
    name: 'server-only extended key usage: refused',
    leaf: { name: [{ CN: ['server'] }], usages: ['server'] },
    expected: { kind: 'rejected' },
    refusedAtHandshake: true,
  },
  { name: 'no extended key usage extension', leaf: { name: [{ CN: ['legacy'] }], usages: [] }, expected: { kind: 'identity', user: 'legacy', groups: [] } },
  {
    name: 'expired: refused',
    leaf: { name: [{ CN: ['old'] }], notBefore: new Date(Date.now() - 2 * HOUR), notAfter: new Date(Date.now() - HOUR) },
    expected: { kind: 'rejected' },
    refusedAtHandshake: true,
  },
];
