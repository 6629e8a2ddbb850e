// xDS snapshots: versions follow content only.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeSnapshot, snapshotVersions } from '../../../src/xds/snapshot.js';
import { CDS, EDS, LDS, RDS, config } from '../../support/snapshotFixtures.js';

describe('snapshot versions', () => {
  it('same content gives the same version whatever the key and resource order', () => {
    const a = makeSnapshot({
      clusters: [
        { name: 'a', connect_timeout: { seconds: 1 }, type: 'STATIC' },
        { name: 'b', type: 'STATIC' },
      ],
    });
    const b = makeSnapshot({
      clusters: [
        { type: 'STATIC', name: 'b' },
        { type: 'STATIC', connect_timeout: { seconds: 1 }, name: 'a' },
      ],
    });
    assert.deepEqual(snapshotVersions(a), snapshotVersions(b));
  });

  it('secrets are versioned by what they name, never by the content of the files they name', () => {
    const secret = (path: string) => makeSnapshot({ secrets: [{ name: 'client-ca', validation_context: { trusted_ca: { filename: path } } }] });
    const url = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
    assert.equal(secret('/pki/ca.crt').types[url].version, secret('/pki/ca.crt').types[url].version);
    assert.notEqual(secret('/pki/ca.crt').types[url].version, secret('/pki/other.crt').types[url].version);
    assert.equal(secret('/pki/ca.crt').types[url].resources.size, 1);
  });

  it('changed content gives a new version for that type only', () => {
    const before = config({ port: 8080 });
    const after = config({ port: 8081 });
    assert.notEqual(after.types[EDS].version, before.types[EDS].version);
    assert.equal(after.types[CDS].version, before.types[CDS].version);
    assert.equal(after.types[LDS].version, before.types[LDS].version);
    assert.equal(after.types[RDS].version, before.types[RDS].version);
  });

  it('duplicate resource names are refused', () => {
    assert.throws(() => makeSnapshot({ clusters: [{ name: 'x' }, { name: 'x' }] }), /duplicate .*Cluster "x"/);
  });
});
