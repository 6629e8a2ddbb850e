// Which half of a change goes first, decided from the routes the sidecar
// holds and the next snapshot's (src/xds/changeOrder.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { changeOrder } from '../../../src/xds/changeOrder.js';
import { makeSnapshot, type Snapshot } from '../../../src/xds/snapshot.js';

function routes(names: readonly string[], documents = 'same'): Snapshot {
  return makeSnapshot({
    routes: [{ name: 'ingress', virtual_hosts: [{ name: 'all', domains: ['*'], routes: names.map((name) => ({ name, match: { prefix: `/${name}` } })) }] }],
    extensionConfigs: [{ name: 'document', typed_config: { type_url: 'type.googleapis.com/google.protobuf.StringValue', value: Buffer.from(documents) } }],
  });
}

describe('changeOrder', () => {
  it('puts the routes first when the routes the sidecar holds are unknown', () => {
    assert.equal(changeOrder(undefined, routes(['jobs'])), 'routes-first');
  });

  it('puts the routes first when the change adds a route', () => {
    assert.equal(changeOrder(routes(['pods']), routes(['jobs', 'pods'])), 'routes-first');
  });

  it('puts the documents first when the change only drops routes', () => {
    assert.equal(changeOrder(routes(['jobs', 'pods']), routes(['pods'])), 'documents-first');
  });

  it('puts the routes first when the change adds a route and drops another', () => {
    assert.equal(changeOrder(routes(['jobs']), routes(['pods'])), 'routes-first');
  });

  it('puts the routes first when the routes keep their names (only the documents, or a destination, change)', () => {
    assert.equal(changeOrder(routes(['jobs'], 'a'), routes(['jobs'], 'b')), 'routes-first');
  });
});
