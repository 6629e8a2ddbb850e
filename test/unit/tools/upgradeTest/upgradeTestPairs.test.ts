import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newObject } from '../../../../src/tools/upgradeTest/objects.js';
import { RESOURCE_SPECS } from '../../../../src/tools/upgradeTest/observations.js';
import { DEFAULT_PAIR, VERSION_PAIRS, versionPair } from '../../../../src/tools/upgradeTest/pairs.js';

describe('upgrade-test version pairs', () => {
  it('runs 1.36 -> 1.37 unless asked otherwise, its skew on storageversionmigrations', () => {
    const pair = versionPair(DEFAULT_PAIR);
    assert.deepEqual([pair.older, pair.newer, pair.skew], ['v1.36.3', 'v1.37.2', 'storageversionmigrations']);
  });

  it('runs 1.35 -> 1.36 with its skew on mutatingadmissionpolicies, the one resource 1.36 serves by default and 1.35 does not', () => {
    const pair = versionPair('1.35-1.36');
    assert.deepEqual([pair.older, pair.newer, pair.skew], ['v1.35.4', 'v1.36.3', 'mutatingadmissionpolicies']);
    assert.equal(RESOURCE_SPECS.mutatingadmissionpolicies.group, 'admissionregistration.k8s.io');
    assert.equal(RESOURCE_SPECS.mutatingadmissionpolicies.version, 'v1');
  });

  it('puts its skew resource under load and no other pair’s', () => {
    for (const pair of Object.values(VERSION_PAIRS)) {
      assert.ok(pair.resources.includes(pair.skew));
      for (const other of Object.values(VERSION_PAIRS)) if (other !== pair) assert.ok(!pair.resources.includes(other.skew));
    }
  });

  it('names the pairs it knows when asked for another', () => {
    assert.throws(() => versionPair('1.34-1.35'), /1\.36-1\.37, 1\.35-1\.36/);
  });

  it('writes a MutatingAdmissionPolicy that no binding uses, so it mutates nothing', () => {
    const policy = newObject(RESOURCE_SPECS.mutatingadmissionpolicies, 'p1', 7) as { apiVersion: string; kind: string; spec: { failurePolicy: string } };
    assert.equal(policy.apiVersion, 'admissionregistration.k8s.io/v1');
    assert.equal(policy.kind, 'MutatingAdmissionPolicy');
    assert.equal(policy.spec.failurePolicy, 'Ignore');
  });
});
