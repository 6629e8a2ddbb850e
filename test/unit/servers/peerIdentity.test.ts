// Issue 12: on the mutual-TLS xDS listener a stream speaks only for the node its certificate names.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerCertificate } from 'node:tls';
import { certificateNodeNames, nodeClaimRefusal, nodeSidecar, type PeerAuth } from '../../../src/servers/peerIdentity.js';

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

  it("lets a certificate naming both the node and the apiserver claim that apiserver's sidecar", () => {
    assert.equal(nodeClaimRefusal(tls(cert({ CN: 'edge-1' }, 'DNS:kas-a')), 'edge-1', 'kas-a'), undefined);
  });

  it("refuses a node its certificate names when it asks for another apiserver's sidecar", () => {
    assert.equal(
      nodeClaimRefusal(tls(cert({ CN: 'edge-1' })), 'edge-1', 'kas-a'),
      'node "edge-1" asks for the sidecar of "kas-a": the client certificate names "edge-1", not that apiserver',
    );
  });
});

describe('nodeSidecar', () => {
  it('is the node id when the metadata names no apiserver', () => {
    assert.equal(nodeSidecar('kas-a', undefined), 'kas-a');
    assert.equal(nodeSidecar('kas-a', { fields: { other: { kind: 'stringValue', stringValue: 'x' } } }), 'kas-a');
  });

  it('is the apiserver node.metadata names', () => {
    assert.equal(nodeSidecar('edge-1', { fields: { apiserver: { kind: 'stringValue', stringValue: 'kas-b' } } }), 'kas-b');
  });

  it('ignores an empty or non-string apiserver in the metadata', () => {
    assert.equal(nodeSidecar('edge-1', { fields: { apiserver: { kind: 'stringValue', stringValue: '' } } }), 'edge-1');
    assert.equal(nodeSidecar('edge-1', { fields: { apiserver: { kind: 'numberValue', numberValue: 3 } } }), 'edge-1');
  });
});
