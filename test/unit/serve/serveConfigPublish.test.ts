// The `kubernetesService` part of the serve config (src/serve/configPublish.ts):
// off unless asked for, and the only addresses it may ever publish come from
// the file, each one an address pods can reach.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseServeConfig, ConfigError } from '../../../src/serve/config.js';

const apiserver = (n: number, extra: Record<string, unknown> = {}, sidecar: Record<string, unknown> = {}) => ({
  name: `kas-${n}`,
  hostname: `node-${n}`,
  address: `10.0.0.${n}:6444`,
  sidecar: { listen: `10.0.0.${n}:6443`, servingCert: 'a.crt', servingKey: 'a.key', ...sidecar },
  ...extra,
});

const base = {
  kubeconfig: 'kc',
  apiservers: [apiserver(1), apiserver(2)],
  tls: { clientCa: 'ca.crt', frontProxyClientCert: 'fp.crt', frontProxyClientKey: 'fp.key', peerCa: 'ca.crt' },
  xds: { unixSocket: 'xds.sock' },
  replicaName: 'mvproxy-1',
};
const publishing = { ...base, kubernetesService: { publish: true, clusterIp: '10.96.0.1' } };

const parse = (raw: unknown) => parseServeConfig(raw as never, '/etc/mvproxy', false);

function problemsOf(raw: unknown): string[] {
  try {
    parse(raw);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

function assertProblem(raw: unknown, pattern: RegExp): void {
  const problems = problemsOf(raw);
  assert.ok(
    problems.some((p) => pattern.test(p)),
    `expected a problem matching ${pattern} in ${JSON.stringify(problems)}`,
  );
}

describe('serve configuration: kubernetesService', () => {
  it('publishing is off unless kubernetesService.publish is true', () => {
    assert.equal(parse(base).kubernetesService, undefined);
    assert.equal(parse({ ...base, kubernetesService: { publish: false } }).kubernetesService, undefined);
  });

  it('publishes each sidecar at sidecar.listen and each apiserver at address by default, in the default liveness record', () => {
    assert.deepEqual(parse(publishing).kubernetesService, {
      livenessRecord: { namespace: 'kube-system', name: 'mvproxy-liveness' },
      clusterIp: '10.96.0.1',
      plan: {
        family: 'IPv4',
        sidecarPort: 6443,
        apiserverPort: 6444,
        targets: [
          { name: 'kas-1', sidecarIp: '10.0.0.1', apiserverIp: '10.0.0.1' },
          { name: 'kas-2', sidecarIp: '10.0.0.2', apiserverIp: '10.0.0.2' },
        ],
      },
    });
  });

  it('sidecar.publish and publish name the published addresses when the listen addresses are not the ones pods reach', () => {
    const raw = {
      ...publishing,
      apiservers: [
        apiserver(1, { address: '127.0.0.1:7001', publish: '192.0.2.11:6444' }, { listen: '0.0.0.0:6443', publish: '192.0.2.1:6443' }),
        apiserver(2, { address: '127.0.0.1:7002', publish: '192.0.2.12:6444' }, { listen: '0.0.0.0:7443', publish: '192.0.2.2:6443' }),
      ],
    };
    const plan = parse(raw).kubernetesService?.plan;
    assert.deepEqual(plan?.targets, [
      { name: 'kas-1', sidecarIp: '192.0.2.1', apiserverIp: '192.0.2.11' },
      { name: 'kas-2', sidecarIp: '192.0.2.2', apiserverIp: '192.0.2.12' },
    ]);
  });

  it('a sidecar listening where pods cannot reach it needs sidecar.publish', () => {
    assertProblem({ ...publishing, apiservers: [apiserver(1, {}, { listen: '127.0.0.1:6443' })] }, /^apiservers\.kas-1\.sidecar\.publish: required/);
    assertProblem({ ...publishing, apiservers: [apiserver(1, {}, { listen: '0.0.0.0:6443' })] }, /^apiservers\.kas-1\.sidecar\.publish: required/);
  });

  it('an explicit published address must be an IP address that is not loopback, link-local, unspecified or multicast', () => {
    for (const bad of ['127.0.0.2:6443', '169.254.1.1:6443', '0.0.0.0:6443', '224.0.0.1:6443', '[::1]:6443', '[fe80::1]:6443', 'kube.example:6443']) {
      assertProblem({ ...publishing, apiservers: [apiserver(1, {}, { publish: bad })] }, /^apiservers\.kas-1\.sidecar\.publish: /);
      assertProblem({ ...publishing, apiservers: [apiserver(1, { publish: bad })] }, /^apiservers\.kas-1\.publish: /);
    }
  });

  it('an apiserver whose address pods cannot reach is never listed directly (no fallback for its node)', () => {
    const plan = parse({ ...publishing, apiservers: [apiserver(1, { address: '127.0.0.1:6444' }), apiserver(2, { address: '127.0.0.1:7444' })] })
      .kubernetesService?.plan;
    assert.deepEqual(plan?.targets, [
      { name: 'kas-1', sidecarIp: '10.0.0.1' },
      { name: 'kas-2', sidecarIp: '10.0.0.2' },
    ]);
    assert.equal(plan?.apiserverPort, undefined);
  });

  it('every sidecar is published on one port, every apiserver on one port, all of one family', () => {
    assertProblem({ ...publishing, apiservers: [apiserver(1), apiserver(2, {}, { listen: '10.0.0.2:7443' })] }, /every sidecar must be published on one port/);
    assertProblem({ ...publishing, apiservers: [apiserver(1), apiserver(2, { address: '10.0.0.2:7444' })] }, /every apiserver must be published on one port/);
    assertProblem({ ...publishing, apiservers: [apiserver(1), apiserver(2, {}, { publish: '[2001:db8::2]:6443' })] }, /of one family/);
  });

  it('one address is published for one thing only', () => {
    assertProblem({ ...publishing, apiservers: [apiserver(1), apiserver(2, {}, { publish: '10.0.0.1:6443' })] }, /10\.0\.0\.1:6443 is also apiservers\.kas-1/);
  });

  it('IPv6 addresses are kept in the form the API keeps', () => {
    const plan = parse({
      ...publishing,
      apiservers: [apiserver(1, { address: '[2001:DB8:0:0::11]:6444' }, { listen: '[2001:db8:0000::1]:6443' })],
    }).kubernetesService?.plan;
    assert.deepEqual(plan?.targets, [{ name: 'kas-1', sidecarIp: '2001:db8::1', apiserverIp: '2001:db8::11' }]);
    assert.equal(plan?.family, 'IPv6');
  });

  it('the liveness record is a ConfigMap of its own, and the replica name must be usable as its key', () => {
    assert.deepEqual(
      parse({ ...base, kubernetesService: { ...publishing.kubernetesService, livenessRecord: 'mvproxy/alive' } }).kubernetesService?.livenessRecord,
      {
        namespace: 'mvproxy',
        name: 'alive',
      },
    );
    assertProblem(
      { ...base, kubernetesService: { ...publishing.kubernetesService, livenessRecord: 'kube-system/mvproxy-drains' } },
      /^kubernetesService\.livenessRecord: must be/,
    );
    assertProblem({ ...base, kubernetesService: { ...publishing.kubernetesService, livenessRecord: 'no-slash' } }, /^kubernetesService\.livenessRecord: /);
    assertProblem({ ...publishing, replicaName: 'a b' }, /^replicaName: must be a ConfigMap key/);
    assertProblem({ ...base, kubernetesService: { publish: 'yes' } }, /^kubernetesService\.publish: must be true or false/);
  });

  it("publishing needs the Service's ClusterIP (the probes verify each certificate against it, as pods do)", () => {
    assertProblem({ ...base, kubernetesService: { publish: true } }, /^kubernetesService\.clusterIp: required while kubernetesService\.publish is true/);
  });

  it('the ClusterIP is an IPv4 or IPv6 address, nothing else', () => {
    assert.equal(parse({ ...base, kubernetesService: { publish: true, clusterIp: 'fd00::1' } }).kubernetesService?.clusterIp, 'fd00::1');
    for (const clusterIp of ['kubernetes.default.svc', '10.96.0.1:443', '10.96.0.0/12', '[fd00::1]'])
      assert.deepEqual(problemsOf({ ...base, kubernetesService: { publish: true, clusterIp } }), [
        `kubernetesService.clusterIp: ${JSON.stringify(clusterIp)} is not an IP address`,
      ]);
    assertProblem({ ...base, kubernetesService: { publish: true, clusterIp: 42 } }, /^kubernetesService\.clusterIp: must be a non-empty string$/);
  });
});
