// Issue 4: one complete discovery on every sidecar (upstream's peer-aggregated
// discovery scenarios, ported), and client-certificate identity through them.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { httpsRequest, type HttpResult } from '../../src/util/https.js';
import {
  startTestSandbox,
  eventually,
  apiserverNamed,
  AGGREGATED_DISCOVERY_NOPEER_ACCEPT,
  freshKubectlCacheDir,
  type TestSandbox,
} from '../support/sandbox.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';
import { envoyAdminJson } from '../support/envoyAdmin.js';

interface DiscoveryDoc {
  items: { metadata: { name: string }; versions: { version: string; resources: { resource: string }[] }[] }[];
}
const groupsOf = (res: HttpResult): string[] => (JSON.parse(res.body) as DiscoveryDoc).items.map((g) => g.metadata.name);

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.mvproxy.example.com' },
  spec: {
    group: 'mvproxy.example.com',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    scope: 'Namespaced',
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

describe('discovery and identity: A has apps/v1 off, B has batch/v1 off', () => {
  let tb: TestSandbox;
  const as = (who: 'admin' | 'user', server: string, via: 'sidecar' | 'direct') => {
    const s = tb.state();
    const a = apiserverNamed(s, server);
    const base = via === 'sidecar' ? (a.sidecar ?? '') : a.direct;
    return (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
      httpsRequest(
        base + path,
        { ca: s.ca, ...s.clientCerts[who] },
        {
          method,
          headers: { accept: 'application/json', ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
          timeoutMs: 15_000,
        },
      );
  };

  before(async () => {
    tb = await startTestSandbox([
      { name: 'kas-a', version: 'v1.37.2', runtimeConfig: 'apps/v1=false' },
      { name: 'kas-b', version: 'v1.37.2', runtimeConfig: 'batch/v1=false' },
    ]);
  });
  after(() => tb?.sandbox.down());

  it('TestPeerAggregatedDiscovery: each nopeer document lacks its disabled group', async () => {
    assert.ok(!groupsOf(await as('admin', 'kas-a', 'direct')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT })).includes('apps'));
    assert.ok(!groupsOf(await as('admin', 'kas-b', 'direct')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT })).includes('batch'));
  });

  it('TestPeerAggregatedDiscovery: the merged document on both sidecars shows apps and batch', async () => {
    for (const server of ['kas-a', 'kas-b']) {
      await eventually(async () => {
        const groups = groupsOf(await as('admin', server, 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT }));
        assert.ok(groups.includes('apps') && groups.includes('batch'), `${server}: ${groups.join(',')}`);
      }, 60_000);
    }
  });

  it("profile=nopeer through a sidecar gets the local apiserver's own document", async () => {
    const groups = groupsOf(await as('admin', 'kas-a', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT }));
    assert.ok(!groups.includes('apps'));
  });

  // The ETag follows the sidecar's own apiserver and its peer part (docs/never-worse.md, the merge rule):
  // sidecars with the same inputs agree (discoveryFreshness.test.ts), these two serve different versions.
  it('the merged document has an ETag, with Vary: Accept, and a 304 when If-None-Match names it', async () => {
    const a = await as('admin', 'kas-a', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
    assert.ok(a.headers['etag'], 'ETag');
    assert.match(String(a.headers['vary']), /accept/i);
    const again = await as('admin', 'kas-a', 'sidecar')('GET', '/apis', {
      accept: AGGREGATED_DISCOVERY_JSON_ACCEPT,
      'if-none-match': String(a.headers['etag']),
    });
    assert.equal(again.status, 304);
  });

  it('a client asking for protobuf gets the merged document as protobuf, with the same ETag as JSON', async () => {
    const protobuf = await as('admin', 'kas-a', 'sidecar')('GET', '/apis', {
      accept: `${AGGREGATED_DISCOVERY_PROTOBUF},application/json`,
    });
    assert.equal(protobuf.status, 200);
    assert.match(String(protobuf.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf;g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/);
    assert.ok(protobuf.body.startsWith('k8s\u0000'), 'Kubernetes protobuf envelope');
    assert.ok(protobuf.body.includes('batch') && protobuf.body.includes('apps'));
    const json = await as('admin', 'kas-a', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
    assert.equal(protobuf.headers['etag'], json.headers['etag']);
  });

  it("the sidecar asks its apiserver with the apiserver's own ETag: its empty 304 authorizes the request, and the client gets the merged document", async () => {
    const socket = apiserverNamed(tb.state(), 'kas-a').sidecarAdminSocket ?? '';
    const localNotModified = async (): Promise<number> =>
      (await envoyAdminJson<{ stats: Array<{ value: number }> }>(socket, '/stats?format=json&filter=mvproxy_document_local_not_modified$')).stats[0]?.value ??
      0;
    // The ETag reaches the sidecar with the documents once the control plane has read its apiserver.
    await eventually(async () => {
      const before = await localNotModified();
      const res = await as('admin', 'kas-a', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
      assert.equal(res.status, 200);
      assert.ok(groupsOf(res).includes('apps') && groupsOf(res).includes('batch'), 'the merged document');
      assert.equal(await localNotModified(), before + 1);
    }, 30_000);
  });

  it('a client with a made-up token does not get the merged document', async () => {
    const s = tb.state();
    const res = await httpsRequest(
      `${apiserverNamed(s, 'kas-a').sidecar}/apis`,
      { ca: s.ca },
      { headers: { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT, authorization: 'Bearer made-up' } },
    );
    assert.equal(res.status, 401);
  });

  it('TestPeerAggregatedDiscoveryWithCRD: a CRD created on A appears in both merged documents, changes the ETag, and disappears after deletion', async () => {
    const before = await as('admin', 'kas-b', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
    const created = await as('admin', 'kas-a', 'direct')('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {}, crd);
    assert.equal(created.status, 201, created.body);
    for (const server of ['kas-a', 'kas-b']) {
      await eventually(
        async () =>
          assert.ok(
            groupsOf(await as('admin', server, 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT })).includes('mvproxy.example.com'),
          ),
        60_000,
      );
    }
    const after = await as('admin', 'kas-b', 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
    assert.notEqual(after.headers['etag'], before.headers['etag']);
    const deleted = await as('admin', 'kas-a', 'direct')('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
    assert.equal(deleted.status, 200, deleted.body);
    for (const server of ['kas-a', 'kas-b']) {
      await eventually(
        async () =>
          assert.ok(
            !groupsOf(await as('admin', server, 'sidecar')('GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT })).includes('mvproxy.example.com'),
          ),
        60_000,
      );
    }
  });

  it('the ordinary-user certificate is itself through either sidecar, forged X-Remote headers or not', async () => {
    const forged = { 'x-remote-user': 'mvproxy-admin', 'x-remote-group': 'system:masters', 'x-remote-extra-scopes': 'all' };
    for (const server of ['kas-a', 'kas-b']) {
      for (const headers of [{}, forged]) {
        const res = await as('user', server, 'sidecar')('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', headers, {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'SelfSubjectReview',
        });
        assert.equal(res.status, 201, res.body);
        const user = (JSON.parse(res.body) as { status: { userInfo: { username: string; groups: string[]; extra?: Record<string, string[]> } } }).status
          .userInfo;
        assert.equal(user.username, 'alice');
        assert.deepEqual(user.groups, ['system:authenticated']);
        // The credential id the apiserver itself records for an x509 client; never a forged extra.
        assert.deepEqual(Object.keys(user.extra ?? {}), ['authentication.kubernetes.io/credential-id']);
      }
    }
  });

  it('the ordinary user is forbidden where RBAC forbids it, on a local and on a rerouted resource', async () => {
    for (const server of ['kas-a', 'kas-b']) {
      assert.equal((await as('user', server, 'sidecar')('GET', '/api/v1/namespaces/default/secrets', { 'x-remote-group': 'system:masters' })).status, 403);
      assert.equal((await as('user', server, 'sidecar')('GET', '/apis/batch/v1/namespaces/default/jobs', { 'x-remote-group': 'system:masters' })).status, 403);
      assert.equal((await as('user', server, 'sidecar')('GET', '/apis/apps/v1/namespaces/default/deployments')).status, 403);
    }
  });

  it('the ordinary user is allowed where a RoleBinding allows it, on a local and on a rerouted resource', async () => {
    const admin = as('admin', 'kas-a', 'direct');
    const role = await admin(
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles',
      {},
      {
        metadata: { name: 'alice-reader' },
        rules: [{ apiGroups: ['batch', 'apps'], resources: ['jobs', 'deployments'], verbs: ['get', 'list', 'watch'] }],
      },
    );
    assert.equal(role.status, 201, role.body);
    const binding = await admin(
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings',
      {},
      {
        metadata: { name: 'alice-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'alice-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    );
    assert.equal(binding.status, 201, binding.body);
    for (const server of ['kas-a', 'kas-b']) {
      await eventually(async () => {
        assert.equal((await as('user', server, 'sidecar')('GET', '/apis/batch/v1/namespaces/default/jobs')).status, 200);
        assert.equal((await as('user', server, 'sidecar')('GET', '/apis/apps/v1/namespaces/default/deployments')).status, 200);
      }, 30_000);
    }
  });

  it('a watch through a rerouted route arrives with the certificate identity', async () => {
    const s = tb.state();
    const url = `${apiserverNamed(s, 'kas-b').sidecar}/apis/batch/v1/namespaces/default/jobs?watch=1`;
    const events = new Promise<string>((resolve, reject) => {
      const req = request(url, { ca: readFileSync(s.ca), cert: readFileSync(s.clientCerts.user.cert), key: readFileSync(s.clientCerts.user.key) }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`watch as alice answered ${res.statusCode}`));
        res.on('data', (chunk: Buffer) => {
          if (chunk.toString('utf8').includes('"watched-by-alice"')) {
            req.destroy();
            resolve(chunk.toString('utf8'));
          }
        });
        void as('admin', 'kas-a', 'direct')(
          'POST',
          '/apis/batch/v1/namespaces/default/jobs',
          {},
          {
            metadata: { name: 'watched-by-alice' },
            spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
          },
        );
      });
      req.setTimeout(30_000, () => req.destroy(new Error('no event within 30 s')));
      req.on('error', (err) => ((err as { code?: string }).code === 'ECONNRESET' ? undefined : reject(err)));
      req.end();
    });
    assert.match(await events, /"type":"ADDED"/);
  });

  // An upgrade to a pod that does not exist still reaches the apiserver's
  // authorization, which names the user it saw.
  const upgradeHeaders = {
    WebSocket: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-protocol': 'v5.channel.k8s.io',
    },
    SPDY: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' },
  } as const;
  for (const transport of ['WebSocket', 'SPDY'] as const) {
    for (const [subresource, query] of [
      ['exec', 'command=true&stdout=true'],
      ['portforward', 'ports=80'],
    ] as const) {
      it(`a ${subresource} upgrade over ${transport} reaches the apiserver with the certificate identity`, async () => {
        for (const server of ['kas-a', 'kas-b']) {
          const path = `/api/v1/namespaces/default/pods/no-such-pod/${subresource}?${query}`;
          const method = transport === 'SPDY' ? 'POST' : 'GET';
          const asAlice = await as('user', server, 'sidecar')(method, path, upgradeHeaders[transport]);
          assert.equal(asAlice.status, 403, asAlice.body);
          assert.match(asAlice.body, new RegExp(`User \\\\"alice\\\\" cannot \\w+ resource \\\\"pods/${subresource}\\\\"`));
          const asAdmin = await as('admin', server, 'sidecar')(method, path, upgradeHeaders[transport]);
          assert.equal(asAdmin.status, 404, asAdmin.body);
        }
      });
    }
  }

  it('kubectl with a fresh discovery cache sees the same resources on every sidecar', async () => {
    const lists = await Promise.all(
      ['kas-a', 'kas-b'].map(async (server) => {
        const cacheDir = freshKubectlCacheDir();
        const res = await tb.kubectl(apiserverNamed(tb.state(), server).kubeconfig.sidecar ?? '', ['api-resources', '--cache-dir', cacheDir, '-o', 'name']);
        assert.equal(res.code, 0, res.stderr);
        return res.stdout.trim().split('\n').sort();
      }),
    );
    assert.deepEqual(lists[0], lists[1]);
    assert.ok(lists[0]?.includes('jobs.batch') && lists[0]?.includes('deployments.apps'));
  });

  it('@kubernetes/client-node sees the same groups on every sidecar', async () => {
    const { KubeConfig, ApisApi } = await import('@kubernetes/client-node');
    const groups = await Promise.all(
      ['kas-a', 'kas-b'].map(async (server) => {
        const kc = new KubeConfig();
        kc.loadFromFile(apiserverNamed(tb.state(), server).kubeconfig.sidecar ?? '');
        const list = await kc.makeApiClient(ApisApi).getAPIVersions();
        return list.groups.map((g) => g.name).sort();
      }),
    );
    assert.deepEqual(groups[0], groups[1]);
  });
});
