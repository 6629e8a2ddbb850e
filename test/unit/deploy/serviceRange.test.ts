// The `kubernetes` Service's ClusterIP that `mvproxy deploy kubeadm
// (publishing, its default)` writes into every replica's config
// (src/deploy/serviceRange.ts, --service-cidr): the first address of the
// Service range, as kubeadm and kube-apiserver take it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KUBEADM_SERVICE_SUBNET, kubernetesServiceIp } from '../../../src/deploy/serviceRange.js';

const cli = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));
const renderedClusterIp = (...flags: string[]): unknown => {
  const out = mkdtempSync(join(tmpdir(), 'mvproxy-deploy-'));
  execFileSync(process.execPath, [cli, 'deploy', 'kubeadm', '--node', 'cp-1=10.0.0.11', '--out', out, ...flags]);
  const config = JSON.parse(readFileSync(join(out, 'cp-1/etc/mvproxy/mvproxy.json'), 'utf8')) as { kubernetesService?: { clusterIp?: string } };
  return config.kubernetesService?.clusterIp;
};

describe("the kubernetes Service's ClusterIP from the Service range", () => {
  it("is the range's first address after its network address: kubeadm's default gives 10.96.0.1", () => {
    assert.equal(KUBEADM_SERVICE_SUBNET, '10.96.0.0/12');
    assert.equal(kubernetesServiceIp(KUBEADM_SERVICE_SUBNET), '10.96.0.1');
    assert.equal(kubernetesServiceIp('10.0.0.0/24'), '10.0.0.1');
  });

  it('counts from the network address, whatever address the range is written with', () => {
    assert.equal(kubernetesServiceIp('10.96.7.9/12'), '10.96.0.1');
  });

  it('of an IPv6 range, in the compressed form', () => {
    assert.equal(kubernetesServiceIp('fd00:10:96::/112'), 'fd00:10:96::1');
    assert.equal(kubernetesServiceIp('FD00:0:0:0:0:0:0:0/108'), 'fd00::1');
  });

  it('of a dual-stack range, the first one (the Service is of the primary family)', () => {
    assert.equal(kubernetesServiceIp('fd00::/108,10.96.0.0/12'), 'fd00::1');
  });

  it('refuses what is not a range with room for a Service', () => {
    for (const cidr of ['10.96.0.1', '10.96.0.0/33', 'kubernetes/12', '10.96.0.0/31', 'fd00::/127', ''])
      assert.throws(() => kubernetesServiceIp(cidr), /is not a Service range/, cidr);
  });

  it('deploy kubeadm (publishing, its default) writes it into every config, from --service-cidr (default 10.96.0.0/12)', () => {
    assert.equal(renderedClusterIp(), '10.96.0.1');
    assert.equal(renderedClusterIp('--service-cidr', '172.20.0.0/16'), '172.20.0.1');
    assert.equal(renderedClusterIp('--no-publish-kubernetes-service'), undefined, 'not in the adoption step');
  });
});
