// Legacy discovery on the wire (src/discovery/legacyWire.ts): JSON and
// protobuf byte for byte as kube-apiserver's Go types write them. The
// expected bytes were written by k8s.io/apimachinery v0.37.2's meta/v1
// types (encoding/json and the generated Marshal) for the same values.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  decodeLegacyProtobuf,
  encodeGroupMessage,
  encodeGroupVersionMessage,
  encodeLegacyProtobuf,
  encodeResourceMessage,
  goJsonText,
  goOrderedGroup,
  goOrderedGroupVersion,
  goOrderedLegacy,
  goOrderedResource,
  type LegacyBody,
} from '../../../src/discovery/legacyWire.js';
import type { APIGroup, APIResource } from '../../../src/model/legacyDiscovery.js';
import { legacyGroup } from '../../support/legacyBodies.js';

const CSINODE_STATUS: APIResource = {
  name: 'csinodes/status',
  singularName: 'csinode',
  namespaced: false,
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'CSINode',
  verbs: ['get', 'patch'],
};
const JOBS: APIResource = {
  name: 'jobs',
  singularName: 'job',
  namespaced: true,
  group: 'batch',
  version: 'v1',
  kind: 'Job',
  verbs: ['create', 'get'],
  shortNames: ['j'],
  categories: ['all'],
};
const BATCH: APIGroup = legacyGroup('batch', 'v1');

describe('legacy JSON as Go writes it', () => {
  test('an APIResource: name, singularName, namespaced, group, version, kind, verbs, shortNames, categories', () => {
    assert.equal(
      goJsonText(
        goOrderedResource({
          verbs: JOBS.verbs,
          categories: ['all'],
          kind: 'Job',
          shortNames: ['j'],
          version: 'v1',
          group: 'batch',
          namespaced: true,
          singularName: 'job',
          name: 'jobs',
        }),
      ),
      '{"name":"jobs","singularName":"job","namespaced":true,"group":"batch","version":"v1","kind":"Job","verbs":["create","get"],"shortNames":["j"],"categories":["all"]}',
    );
  });

  test('an APIResource leaves out empty group, version, shortNames and categories, and writes nil verbs as null', () => {
    assert.equal(
      goJsonText(goOrderedResource({ name: 'x', singularName: '', namespaced: false, group: '', kind: 'X', verbs: null, shortNames: [] })),
      '{"name":"x","singularName":"","namespaced":false,"kind":"X","verbs":null}',
    );
  });

  test('an APIGroup: name, versions, preferredVersion; a GroupVersionForDiscovery: groupVersion, version', () => {
    assert.equal(
      goJsonText(goOrderedGroup(BATCH)),
      '{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}',
    );
    assert.equal(goJsonText(goOrderedGroupVersion({ version: 'v2', groupVersion: 'batch/v2' })), '{"groupVersion":"batch/v2","version":"v2"}');
  });

  test('APIVersions writes absent serverAddressByClientCIDRs as null, after kind and versions', () => {
    const body: LegacyBody = { kind: 'APIVersions', document: { versions: ['v1'], kind: 'APIVersions' } };
    assert.equal(goJsonText(goOrderedLegacy(body)), '{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":null}');
  });
});

describe('legacy protobuf as gogo writes it', () => {
  test('an APIResource message: every optional scalar, fields ascending, verbs as a Verbs message', () => {
    assert.equal(
      encodeResourceMessage(CSINODE_STATUS).toString('hex'),
      '0a0f6373696e6f6465732f73746174757310001a074353494e6f6465220c0a036765740a05706174636832076373696e6f6465420e73746f726167652e6b38732e696f4a0276315200',
    );
    assert.equal(
      encodeResourceMessage(JOBS).toString('hex'),
      '0a046a6f627310011a034a6f62220d0a066372656174650a036765742a016a32036a6f623a03616c6c420562617463684a0276315200',
    );
  });

  test('an APIGroup and a GroupVersionForDiscovery message', () => {
    assert.equal(encodeGroupMessage(BATCH).toString('hex'), '0a056261746368120e0a0862617463682f7631120276311a0e0a0862617463682f763112027631');
    assert.equal(encodeGroupVersionMessage({ groupVersion: 'batch/v2', version: 'v2' }).toString('hex'), '0a0862617463682f763212027632');
  });

  test('a legacy document reads back as it was written, its kind from the envelope', () => {
    const bodies: LegacyBody[] = [
      {
        kind: 'APIVersions',
        document: { kind: 'APIVersions', versions: ['v1', 'v2'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }] },
      },
      { kind: 'APIGroupList', document: { kind: 'APIGroupList', apiVersion: 'v1', groups: [BATCH] } },
      { kind: 'APIGroup', document: { kind: 'APIGroup', apiVersion: 'v1', ...BATCH } },
      {
        kind: 'APIResourceList',
        document: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'batch/v1', resources: [JOBS, { ...CSINODE_STATUS, verbs: null }] },
      },
    ];
    for (const body of bodies) assert.deepEqual(decodeLegacyProtobuf(encodeLegacyProtobuf(body)), body);
  });

  test('a body of another type is refused', () => {
    const body = encodeLegacyProtobuf({ kind: 'APIGroupList', document: { groups: [] } });
    assert.throws(() => decodeLegacyProtobuf(body.subarray(4)), /not a Kubernetes protobuf body/);
  });
});
