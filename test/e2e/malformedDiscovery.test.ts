// Content from apiservers is data, not a verdict on them. An APIService whose
// extension server lists a resource named "" (and other malformed entries)
// next to a good one: kube-aggregator copies those entries, unchecked, into
// every apiserver's own /apis. Before, the control plane then marked every
// apiserver unreachable and every sidecar answered 503 to every resource
// request. Now those entries are dropped alone, logged once, counted, and
// every other resource is served through every sidecar, including the skew
// reroute (StorageVersionMigrations through the v1.36.3 sidecar).
//
// The extension server is a tiny Node HTTPS server on the host's loopback,
// reached from inside the sandbox's network namespace at the same address
// (Sandbox.net.reachHost). The aggregator reaches it through an ExternalName
// Service (`localhost`): without --enable-aggregator-routing it resolves a
// service to its ClusterIP (unroutable in the sandbox) or, for ExternalName,
// to that name and the APIService's port; Endpoints would not do, their
// validation rejects loopback addresses.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  startTestSandbox,
  eventually,
  serviceAccountToken,
  tokenClient,
  apiserverNamed,
  AGGREGATED_DISCOVERY_NOPEER_ACCEPT,
  type TestSandbox,
} from '../support/sandbox.js';
import { AGGREGATED_DISCOVERY_AS, AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../src/model/discovery.js';

const GROUP = 'widgets.example.com';
const SVM_PATH = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';

/** What the extension server lists: one good resource, and three malformed entries next to it. */
const EXTENSION_DISCOVERY = {
  kind: 'APIGroupDiscoveryList',
  apiVersion: 'apidiscovery.k8s.io/v2',
  metadata: {},
  items: [
    {
      metadata: { name: GROUP },
      versions: [
        {
          version: 'v1',
          resources: [
            {
              resource: 'widgets',
              responseKind: { group: GROUP, version: 'v1', kind: 'Widget' },
              scope: 'Namespaced',
              singularResource: 'widget',
              verbs: ['get', 'list'],
              // A subresource named "": dropped alone, widgets stays.
              subresources: [{ subresource: '', responseKind: { group: GROUP, version: 'v1', kind: 'Widget' }, verbs: ['get'] }],
            },
            { resource: '', responseKind: { group: GROUP, version: 'v1', kind: 'Nameless' }, scope: 'Namespaced', singularResource: '', verbs: ['get'] },
            {
              resource: 'Gadgets/All',
              responseKind: { group: GROUP, version: 'v1', kind: 'Gadget' },
              scope: 'Cluster',
              singularResource: 'gadget',
              verbs: ['get'],
            },
          ],
        },
      ],
    },
  ],
};

const RESOURCE_LIST = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: `${GROUP}/v1`,
  resources: [{ name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['get', 'list'] }],
};

/** The extension server: its discovery, its group-version's resource list, and an empty list of widgets. */
function startExtensionServer(cert: string, key: string): Promise<Server> {
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const json = (status: number, body: unknown, contentType = 'application/json'): void => {
      res.writeHead(status, { 'content-type': contentType });
      res.end(JSON.stringify(body));
    };
    if (path === '/apis' && (req.headers.accept ?? '').includes(AGGREGATED_DISCOVERY_AS)) return json(200, EXTENSION_DISCOVERY, AGGREGATED_DISCOVERY_JSON);
    if (path === `/apis/${GROUP}/v1`) return json(200, RESOURCE_LIST);
    if (/^\/apis\/widgets\.example\.com\/v1\/(namespaces\/[^/]+\/)?widgets$/.test(path ?? '')) {
      return json(200, { kind: 'WidgetList', apiVersion: `${GROUP}/v1`, metadata: {}, items: [] });
    }
    return json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

interface StatusDump {
  apiservers: { name: string; reachable: boolean; servedResources: number }[];
}

interface DiscoveryDoc {
  items: { metadata: { name?: string }; versions: { version: string; resources: { resource: string; subresources?: { subresource: string }[] }[] }[] }[];
}

describe('one APIService listing malformed discovery: v1.36.3 and v1.37.2 with sidecars', () => {
  let tb: TestSandbox;
  let token: string;
  let extension: Server;
  const started = Date.now();
  const client = (name: string, via: 'sidecar' | 'direct' = 'sidecar') => {
    const s = tb.state();
    const a = apiserverNamed(s, name);
    return tokenClient(s, via === 'sidecar' ? (a.sidecar ?? '') : a.direct, token);
  };
  const controlPlane = async (path: string): Promise<string> => {
    const admin = tb.state().controlPlane?.admin;
    assert.ok(admin, 'the sandbox runs the control plane');
    const res = await fetch(`${admin}${path}`);
    assert.equal(res.status, 200);
    return res.text();
  };
  const parseErrors = async (): Promise<number> => {
    const line = (await controlPlane('/metrics')).split('\n').find((l) => l.startsWith('apiserver_peer_discovery_sync_errors_total{type="parse"}'));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  before(async () => {
    tb = await startTestSandbox([
      { name: 'kas-a', version: 'v1.36.3' },
      { name: 'kas-b', version: 'v1.37.2' },
    ]);
    token = await serviceAccountToken(tb.state(), 'malformed-admin', 'cluster-admin');
    // Any certificate will do: the APIService skips TLS verification.
    const serving = tb.sandbox.pkiFiles().serving['kas-a'];
    assert.ok(serving);
    extension = await startExtensionServer(serving.cert, serving.key);
    const port = (extension.address() as AddressInfo).port;
    await tb.sandbox.net.reachHost(port);
    const direct = client('kas-b', 'direct');
    const service = await direct('POST', '/api/v1/namespaces/default/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'widgets-extension' },
      spec: { type: 'ExternalName', externalName: 'localhost' },
    });
    assert.equal(service.status, 201, service.body);
    const apiService = await direct('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: { name: `v1.${GROUP}` },
      spec: {
        group: GROUP,
        version: 'v1',
        service: { namespace: 'default', name: 'widgets-extension', port },
        insecureSkipTLSVerify: true,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
      },
    });
    assert.equal(apiService.status, 201, apiService.body);
  });

  after(async () => {
    await tb?.sandbox.down();
    extension?.close();
    console.log(`# malformedDiscovery: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  it('every apiserver\'s own /apis carries the extension server\'s resource named "" (kube-aggregator copies it unchecked)', async () => {
    for (const name of ['kas-a', 'kas-b']) {
      await eventually(
        async () => {
          const res = await client(name, 'direct')('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT });
          assert.equal(res.status, 200);
          const group = (JSON.parse(res.body) as DiscoveryDoc).items.find((g) => g.metadata.name === GROUP);
          const resources = group?.versions[0]?.resources.map((r) => r.resource);
          assert.deepEqual(resources, ['widgets', '', 'Gadgets/All'], `${name}: ${JSON.stringify(group)}`);
        },
        60_000,
        500,
      );
    }
  });

  it('the control plane has read those documents (a parse sync error counted) and sees every apiserver reachable', async () => {
    await eventually(async () => assert.ok((await parseErrors()) >= 2, 'one per apiserver document'), 30_000, 500);
    const status = JSON.parse(await controlPlane('/status')) as StatusDump;
    assert.deepEqual(
      status.apiservers.map((a) => [a.name, a.reachable, a.servedResources > 20]),
      [
        ['kas-a', true, true],
        ['kas-b', true, true],
      ],
    );
  });

  it('lists configmaps through both sidecars', async () => {
    for (const name of ['kas-a', 'kas-b']) {
      const res = await client(name)('GET', '/api/v1/namespaces/default/configmaps');
      assert.equal(res.status, 200, `${name}: ${res.body}`);
    }
  });

  it('lists StorageVersionMigrations through the v1.36.3 sidecar, which reroutes them to v1.37.2', async () => {
    await eventually(
      async () => {
        const res = await client('kas-a')('GET', SVM_PATH);
        assert.equal(res.status, 200, res.body);
        assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'StorageVersionMigrationList');
      },
      15_000,
      500,
    );
  });

  it("lists the extension server's good resource through both sidecars (its apiservers' aggregators proxy it)", async () => {
    for (const name of ['kas-a', 'kas-b']) {
      const res = await client(name)('GET', `/apis/${GROUP}/v1/namespaces/default/widgets`);
      assert.equal(res.status, 200, `${name}: ${res.body}`);
      assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'WidgetList');
    }
  });

  it("the merged discovery on the v1.36.3 sidecar lists the peer's StorageVersionMigrations and the local apiserver's own APIService entries as it listed them", async () => {
    const res = await client('kas-a')('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
    assert.equal(res.status, 200);
    const doc = JSON.parse(res.body) as DiscoveryDoc;
    const names = doc.items.map((g) => g.metadata.name);
    assert.ok(names.includes('storagemigration.k8s.io'), names.join(' '));
    assert.deepEqual(
      doc.items.find((g) => g.metadata.name === GROUP)?.versions[0]?.resources.map((r) => r.resource),
      ['widgets', '', 'Gadgets/All'],
    );
  });

  it('each dropped entry is warned about once per apiserver, not at every poll', async () => {
    await new Promise((r) => setTimeout(r, 3000)); // six polls more at 500 ms
    const log = readFileSync(join(tb.state().logs, 'mvproxy.log'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('malformed discovery entry dropped'))
      .map((l) => JSON.parse(l) as { apiserver: string; entry: string });
    const count = (apiserver: string, entry: string) => log.filter((l) => l.apiserver === apiserver && l.entry === entry).length;
    for (const apiserver of ['kas-a', 'kas-b']) {
      assert.equal(count(apiserver, `group "${GROUP}" version "v1" resource ""`), 1, apiserver);
      assert.equal(count(apiserver, `group "${GROUP}" version "v1" resource "Gadgets/All"`), 1, apiserver);
      assert.equal(count(apiserver, `group "${GROUP}" version "v1" resource "widgets" subresource ""`), 1, apiserver);
    }
  });
});
