// Issue 12: on the mutual-TLS xDS listener a stream speaks only for the node its certificate names.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerCertificate } from 'node:tls';
import { certificateNodeNames, nodeClaimRefusal, type PeerAuth } from '../../src/servers/peerIdentity.js';

// Only the fields the rule reads, shaped as Node reports them.
const cert = (subject: Record<string, string | string[]>, subjectaltname?: string): PeerCertificate =>
  ({ subject, ...(subjectaltname === undefined ? {} : { subjectaltname }) }) as unknown as PeerCertificate;
const tls = (peer: PeerCertificate | undefined): PeerAuth => ({ transportSecurityType: 'ssl', ...(peer ? { sslPeerCertificate: peer } : {}) });

describe('certificateNodeNames', () => {
  it('names the Subject CN and every DNS SAN', () => {
    assert.deepEqual(certificateNodeNames(cert({ CN: 'kas-a' }, 'DNS:kas-a.example, IP Address:10.0.0.1, DNS:cp-1')), ['kas-a', 'kas-a.example', 'cp-1']);
  });

  it('takes every CN of a subject with several', () => {
    assert.deepEqual(certificateNodeNames(cert({ CN: ['kas-a', 'kas-b'] })), ['kas-a', 'kas-b']);
  });

  it('ignores SAN entries Node had to quote', () => {
    assert.deepEqual(certificateNodeNames(cert({}, 'DNS:"kas-a, DNS:kas-b"')), []);
  });
});

describe('nodeClaimRefusal', () => {
  it('lets any node id through on a Unix socket (its file mode is the authorization)', () => {
    assert.equal(nodeClaimRefusal({}, 'kas-a'), undefined);
    assert.equal(nodeClaimRefusal(null, 'kas-a'), undefined);
  });

  it('lets a certificate claim the node its CN names', () => {
    assert.equal(nodeClaimRefusal(tls(cert({ CN: 'kas-a' })), 'kas-a'), undefined);
  });

  it('lets a certificate claim the node a DNS SAN names', () => {
    assert.equal(nodeClaimRefusal(tls(cert({ CN: 'sidecar' }, 'DNS:kas-b')), 'kas-b'), undefined);
  });

  it('refuses a certificate claiming another node, naming what it does name', () => {
    assert.equal(nodeClaimRefusal(tls(cert({ CN: 'kas-a' })), 'kas-b'), 'node "kas-b": the client certificate names "kas-a", not this node');
  });

  it('refuses a TLS connection without a client certificate', () => {
    assert.match(nodeClaimRefusal(tls(undefined), 'kas-a') ?? '', /presented no client certificate/);
  });
});
