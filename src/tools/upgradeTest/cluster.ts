// The harness's own access to the cluster, outside the load: setting up the
// namespace and the CRD, and reading every object back at a check. It talks
// to a running apiserver directly with the admin certificate, so a check
// never depends on what is being tested.
import type { Sandbox } from '../sandbox/sandbox.js';
import { httpsRequest, type HttpResult } from '../../util/https.js';
import type { Credentials, Entry } from './balancer.js';
import { CRD_GROUP, GEN_ANNOTATION, TEST_NAMESPACE, RESOURCE_SPECS, type ResourceKey, type Snapshot } from './observations.js';
import { collectionPath, discoveryGroups, widgetCrd } from './objects.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../entry/discovery.js';
import { setTimeout as sleep } from 'node:timers/promises';

export class ClusterReader {
  constructor(private readonly sandbox: Sandbox) {}

  /** A request to apiserver `via` (by default the first one running), with the admin certificate; throws when it is not running. */
  async direct(method: string, path: string, body?: unknown, via?: string): Promise<HttpResult> {
    const state = this.sandbox.state();
    const running = state.apiservers.find((a) => a.running && (via === undefined || a.name === via));
    if (!running) throw new Error(via === undefined ? 'no apiserver is running' : `apiserver ${via} is not running`);
    return httpsRequest(
      `${running.direct}${path}`,
      { ca: state.ca, ...state.clientCerts.admin },
      {
        method,
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        timeoutMs: 30_000,
      },
    );
  }

  /** Creates the namespace and the CRD, and waits until every entry point serves the CRD and lists its group in discovery. */
  async prepare(entries: Entry[], creds: Credentials): Promise<void> {
    for (const [path, body] of [
      ['/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TEST_NAMESPACE } }],
      ['/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd()],
    ] as const) {
      const res = await this.direct('POST', path, body);
      if (res.status !== 201) throw new Error(`setup: POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    }
    const deadline = Date.now() + 60_000;
    for (const entry of entries) {
      for (;;) {
        const tls = { ca: creds.ca, ...creds.cert };
        const list = await httpsRequest(entry.url + collectionPath(RESOURCE_SPECS.widgets), tls, { timeoutMs: 5000 }).catch(() => undefined);
        const apis = await httpsRequest(`${entry.url}/apis`, tls, { headers: { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT }, timeoutMs: 5000 }).catch(
          () => undefined,
        );
        if (list?.status === 200 && apis?.status === 200 && discoveryGroups(apis.body)?.includes(CRD_GROUP)) break;
        if (Date.now() > deadline) throw new Error(`setup: ${entry.name} does not serve ${CRD_GROUP} after 60 s`);
        await sleep(250);
      }
    }
  }

  /** Every object of each resource in `readFrom` and its generation annotation, read from the apiserver named for it. */
  async snapshot(readFrom: Partial<Record<ResourceKey, string>>): Promise<Snapshot> {
    const snapshot: Snapshot = {};
    for (const [resource, via] of Object.entries(readFrom) as Array<[ResourceKey, string]>) {
      let res: HttpResult | undefined;
      for (let attempt = 0; attempt < 20 && res?.status !== 200; attempt++) {
        if (attempt > 0) await sleep(500);
        res = await this.direct('GET', collectionPath(RESOURCE_SPECS[resource]), undefined, via).catch(() => undefined);
      }
      if (res?.status !== 200) throw new Error(`check: cannot list ${resource} from ${via}: ${res?.status} ${res?.body.slice(0, 300)}`);
      const items = (JSON.parse(res.body) as { items?: Array<{ metadata?: { name?: string; annotations?: Record<string, string> } }> }).items ?? [];
      const found = new Map<string, number | undefined>();
      for (const item of items) {
        const name = item.metadata?.name;
        const gen = item.metadata?.annotations?.[GEN_ANNOTATION];
        if (name !== undefined) found.set(name, gen === undefined ? undefined : Number(gen));
      }
      snapshot[resource] = found;
    }
    return snapshot;
  }
}
