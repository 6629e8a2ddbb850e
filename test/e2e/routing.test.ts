// Issue 3: requests through any sidecar reach an apiserver that serves them.
// Skew is made the way upstream's integration tests make it: one release,
// some groups turned off with --runtime-config.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSandbox, eventually, serviceAccountToken, tokenClient, apiserverNamed, type TestSandbox } from '../support/sandbox.js';
import { startConnectProxy, type ConnectProxy } from '../support/connectProxy.js';
import { AGGREGATED_DISCOVERY_JSON } from '../../src/model/discovery.js';
import { envoyAdminJson } from '../support/envoyAdmin.js';

/** What these tests read of Envoy's /clusters?format=json. */
interface EnvoyClusters {
  cluster_statuses: Array<{
    name: string;
    host_statuses?: Array<{
      address: { socket_address: { address: string; port_value: number } };
      health_status?: { failed_active_health_check?: boolean };
    }>;
  }>;
}

const job = (name: string) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
});

const hpa = (name: string) => ({
  apiVersion: 'autoscaling/v2',
  kind: 'HorizontalPodAutoscaler',
  metadata: { name },
  spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'x' }, minReplicas: 1, maxReplicas: 2 },
});

describe('routing through sidecars: A serves everything, B lacks batch/v1 and autoscaling/v2, C lacks autoscaling/v2', () => {
  let tb: TestSandbox;
  let admin: string;
  const through = (name: string, token = admin) => {
    const s = tb.state();
    const sidecar = apiserverNamed(s, name).sidecar;
    if (!sidecar) throw new Error('sandbox has no sidecars');
    return tokenClient(s, sidecar, token);
  };

  let egress: ConnectProxy;

  before(async () => {
    // Every peer connection goes through an HTTP CONNECT egress proxy (upstream's egress selector).
    // It runs on the host; it reaches the peers, in the sandbox's network namespace, through the sandbox's relay.
    egress = await startConnectProxy((host, port) => {
      if (!tb) throw new Error('the sandbox is not up yet');
      return tb.sandbox.net.dial({ host, port });
    });
    tb = await startTestSandbox(
      [
        // As in production behind a load balancer: after SIGTERM, 5 s of serving with /readyz failing, then refusing.
        { name: 'kas-a', version: 'v1.37.2', shutdownDelaySeconds: 5 },
        { name: 'kas-b', version: 'v1.37.2', runtimeConfig: 'batch/v1=false,autoscaling/v2=false' },
        { name: 'kas-c', version: 'v1.37.2', runtimeConfig: 'autoscaling/v2=false' },
      ],
      { peerEgressProxy: egress.address },
    );
    admin = await serviceAccountToken(tb.state(), 'routing-admin', 'cluster-admin');
  });
  after(async () => {
    await tb?.sandbox.down();
    await egress?.close();
  });

  it('TestPeerProxiedRequest: a Job created through A is listed through B', async () => {
    const created = await through('kas-a')('POST', '/apis/batch/v1/namespaces/default/jobs', job('peer-proxied'));
    assert.equal(created.status, 201, created.body);
    const listed = await eventually(async () => {
      const res = await through('kas-b')('GET', '/apis/batch/v1/namespaces/default/jobs');
      assert.equal(res.status, 200, res.body);
      return JSON.parse(res.body) as { items: { metadata: { name: string } }[] };
    });
    assert.ok(listed.items.some((j) => j.metadata.name === 'peer-proxied'));
  });

  it('TestPeerProxy_EgressDialerIsUsed: peer connections go through the configured egress proxy, local ones do not', () => {
    const s = tb.state();
    // Each apiserver's address as its peers' sidecars dial it: on its node.
    const address = (name: string): string => {
      const a = apiserverNamed(s, name);
      return new URL(a.inNamespace?.direct ?? a.direct).host;
    };
    // kas-b's sidecar sent its Jobs requests to kas-a or kas-c (both serve batch/v1).
    assert.ok(
      egress.targets.some((t) => t === address('kas-a') || t === address('kas-c')),
      `CONNECTs seen: ${egress.targets.join(', ')}`,
    );
    // Nothing is rerouted to kas-b, while its own sidecar has served plenty of local requests: those went direct.
    assert.ok(!egress.targets.includes(address('kas-b')), `CONNECTs seen: ${egress.targets.join(', ')}`);
  });

  it("rerouted requests are counted in apiserver_rerouted_request_total with upstream's labels", async () => {
    const adminUrl = tb.state().controlPlane?.admin ?? '';
    await eventually(async () => {
      const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
      assert.match(metrics, /apiserver_rerouted_request_total\{code="200",group="batch",version="v1",resource="jobs"\} [1-9]/);
    }, 10_000);
  });

  it('a request already marked x-kubernetes-peer-proxied is served locally, never proxied again', async () => {
    const res = await through('kas-b')('GET', '/apis/batch/v1/namespaces/default/jobs', undefined, { 'x-kubernetes-peer-proxied': 'true' });
    assert.equal(res.status, 404);
  });

  it("a resource nobody serves gets the local apiserver's own 404", async () => {
    const unknownGroup = await through('kas-b')('GET', '/apis/widgets.example.com/v1/widgets');
    assert.equal(unknownGroup.status, 404);
    assert.equal(unknownGroup.body.trim(), '404 page not found'); // the apiserver's answer for an unknown group
    const unknownResource = await through('kas-b')('GET', '/api/v1/namespaces/default/widgets');
    assert.equal(unknownResource.status, 404);
    assert.equal((JSON.parse(unknownResource.body) as { kind: string }).kind, 'Status');
  });

  it('a token client that forges X-Remote-User and X-Remote-Group stays itself', async () => {
    const nobody = await serviceAccountToken(tb.state(), 'nobody');
    const forged = { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters', 'x-remote-extra-scopes': 'everything' };
    for (const server of ['kas-a', 'kas-b']) {
      const review = await through(server, nobody)(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        forged,
      );
      assert.equal(review.status, 201, review.body);
      const user = (JSON.parse(review.body) as { status: { userInfo: { username: string; groups: string[]; extra?: Record<string, string[]> } } }).status
        .userInfo;
      assert.equal(user.username, 'system:serviceaccount:default:nobody');
      assert.ok(!user.groups.includes('system:masters'));
      assert.equal(user.extra?.['scopes'], undefined);
      const secrets = await through(server, nobody)('GET', '/api/v1/namespaces/default/secrets', undefined, forged);
      assert.equal(secrets.status, 403);
      const jobs = await through(server, nobody)('GET', '/apis/batch/v1/namespaces/default/jobs', undefined, forged);
      assert.equal(jobs.status, 403, `rerouted request through ${server} must stay forbidden`);
    }
  });

  it('TestPeerProxiedRequestToThirdServerAfterFirstDies: with A stopping, then stopped, and the control plane paused, Jobs through B never fail: its sidecar checks readiness and leaves A to C', async (t) => {
    const jobsPath = '/apis/batch/v1/namespaces/default/jobs';
    const sidecarAdmin = apiserverNamed(tb.state(), 'kas-b').sidecarAdminSocket ?? '';
    /** The members failing their readiness check, in every cluster of B's sidecar that spreads over several. */
    const failingChecks = async (): Promise<string[]> => {
      const { cluster_statuses } = await envoyAdminJson<EnvoyClusters>(sidecarAdmin, '/clusters?format=json');
      const sets = cluster_statuses.filter((c) => (c.host_statuses ?? []).length > 1);
      assert.ok(sets.length > 0, 'B spreads Jobs over A and C');
      const failing = sets.flatMap((c) => (c.host_statuses ?? []).filter((h) => h.health_status?.failed_active_health_check));
      // Named by address: endpoints reached through the egress proxy carry no host name.
      return [...new Set(failing.map((h) => nodeNamed(`${h.address.socket_address.address}:${h.address.socket_address.port_value}`)))];
    };
    const nodeNamed = (hostPort: string): string =>
      tb.state().apiservers.find((a) => new URL(a.inNamespace?.direct ?? a.direct).host === hostPort)?.name ?? hostPort;
    assert.deepEqual(await failingChecks(), []);
    const failures: string[] = [];
    let requests = 0;
    let stopping = false;
    tb.sandbox.pauseControlPlane();
    const load = (async () => {
      while (!stopping) {
        requests++;
        const res = await through('kas-b')('GET', jobsPath);
        if (res.status !== 200) failures.push(`${res.status} ${res.body.slice(0, 200)}`);
      }
    })();
    let outAfterMs = 0;
    try {
      const sigterm = Date.now();
      const stopped = tb.sandbox.stopApiserver('kas-a');
      // A fails /readyz from its SIGTERM on, and serves for its 5 s of delay: out of B's sets well before it refuses.
      await eventually(async () => assert.deepEqual(await failingChecks(), ['kas-a']), 3_000, 100);
      outAfterMs = Date.now() - sigterm;
      await stopped;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      stopping = true;
      await load;
      tb.sandbox.resumeControlPlane();
    }
    t.diagnostic(`A out of B's sets ${outAfterMs} ms after its SIGTERM; ${requests} Jobs requests through B meanwhile`);
    assert.deepEqual(failures, [], `${failures.length} of ${requests} requests failed`);
    assert.ok(requests >= 50, `requests: ${requests}`);
    const listed = await through('kas-b')('GET', jobsPath);
    assert.ok((JSON.parse(listed.body) as { items: { metadata: { name: string } }[] }).items.some((j) => j.metadata.name === 'peer-proxied'));
  });

  it('a resource whose only serving peer is stopped answers 503 with a Status body and Retry-After, never 404', async () => {
    const res = await through('kas-b')('GET', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers');
    assert.equal(res.status, 503, res.body);
    assert.ok(res.headers['retry-after'], 'Retry-After header');
    const status = JSON.parse(res.body) as { kind: string; reason: string; code: number };
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'ServiceUnavailable');
    assert.equal(status.code, 503);
  });

  it("the stopped apiserver's own sidecar routes around it: what peers serve goes to them, the rest answers 503", async () => {
    await eventually(async () => {
      const configmaps = await through('kas-a')('GET', '/api/v1/namespaces/default/configmaps');
      assert.equal(configmaps.status, 200, configmaps.body);
    }, 30_000);
    const hpas = await through('kas-a')('GET', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers');
    assert.equal(hpas.status, 503, hpas.body);
    assert.equal((JSON.parse(hpas.body) as { reason: string }).reason, 'ServiceUnavailable');
    assert.ok(hpas.headers['retry-after']);
  });

  it('what the stopped apiserver would have answered (discovery, /version, a 404) comes from a peer through its sidecar', async () => {
    const version = await through('kas-a')('GET', '/version');
    assert.equal(version.status, 200, version.body);
    assert.match((JSON.parse(version.body) as { gitVersion: string }).gitVersion, /^v1\.37\./);
    const groups = await through('kas-a')('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_JSON });
    assert.equal(groups.status, 200, groups.body.slice(0, 300));
    assert.equal((JSON.parse(groups.body) as { kind: string }).kind, 'APIGroupDiscoveryList');
    const nobody = await through('kas-a')('GET', '/apis/widgets.example.com/v1/widgets');
    assert.equal(nobody.status, 404, nobody.body);
  });

  it("the stopped apiserver's health endpoints through its sidecar say it is down: a 503 Status with Retry-After", async () => {
    const readyz = await through('kas-a')('GET', '/readyz');
    assert.equal(readyz.status, 503, readyz.body);
    assert.match(String(readyz.headers['content-type']), /^application\/json/);
    assert.equal((JSON.parse(readyz.body) as { kind: string; reason: string }).reason, 'ServiceUnavailable');
    assert.ok(readyz.headers['retry-after']);
  });

  it('that resource is served again once its peer is back', async () => {
    await tb.sandbox.startApiserver('kas-a');
    await eventually(async () => {
      const created = await through('kas-b')('POST', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers', hpa('back-again'));
      assert.equal(created.status, 201, created.body);
    }, 30_000);
  });
});
