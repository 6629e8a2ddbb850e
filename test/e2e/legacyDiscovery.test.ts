// Issue 28, item 6: a real legacy discovery client during skew. client-go's
// discovery client in legacy mode (test/support/legacy-discovery: /api, /apis,
// then every /api/v1 and /apis/{g}/{v}), on the sandbox (kube-apiserver
// v1.36.3 and v1.37.2 sharing etcd, one Envoy sidecar each, the control
// plane), through every sidecar, in JSON and in protobuf, with the control
// plane up and paused (SIGSTOP):
// - ServerGroupsAndResources returns no error;
// - it lists every entry (resource, and subresource as `resource/subresource`)
//   the sidecar's own apiserver lists in its legacy documents, read directly;
// - it lists every group, version, resource and subresource the merged
//   aggregated discovery through the same sidecar lists (what the routes send
//   to a peer included);
// - each group's preferredVersion is that group's first version in the merged
//   aggregated discovery (what client-go derives from it), so aggregated and
//   legacy clients agree;
// - every resource it lists with the list verb answers a LIST through that
//   sidecar with 200.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { SandboxApiserverState, SandboxState } from '../../src/tools/sandbox/state.js';
import { ensureLegacyDiscoveryClientOnly } from '../../src/tools/install/index.js';
import { listPath, missingNames } from '../support/discoveryNames.js';
import {
  aggregatedView,
  type AggregatedView,
  type LegacyClientReport,
  type LegacyFormat,
  legacyClientNames,
  legacyDocumentNames,
  legacyGroupVersions,
  listableResources,
  runLegacyClient,
} from '../support/legacyDiscovery.js';
import { controlPlaneInSync, startTestSandbox, type TestSandbox, tokenClient } from '../support/sandbox.js';

const FORMATS: readonly LegacyFormat[] = ['json', 'protobuf'];
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** What one sidecar showed in one window. */
interface SidecarObservation {
  apiserver: string;
  reports: Record<LegacyFormat, LegacyClientReport>;
  /** Entries the sidecar's apiserver listed in its legacy documents both before and after the clients ran. */
  own: string[];
  /** Group versions the apiserver's own /apis lists but answers 404 for (a newer peer's APIService in the shared etcd). */
  unserved: string[];
  /** The same client (JSON) against the apiserver directly, for contrast: what a legacy client gets with no proxy. */
  direct: LegacyClientReport;
  aggregated: AggregatedView;
  lists: Array<{ name: string; status: number; body: string }>;
}

let tb: TestSandbox;
let state: SandboxState;
let token: string;
let client: string;

before(async () => {
  client = await ensureLegacyDiscoveryClientOnly({ log: () => undefined });
  tb = await startTestSandbox([
    { name: 'kas-a', version: 'v1.36.3' },
    { name: 'kas-b', version: 'v1.37.2' },
  ]);
  state = tb.state();
  token = tb.sandbox.adminBearerToken();
  await apiserversSettled();
});
after(() => tb?.sandbox.down());

/**
 * Group versions each apiserver's own aggregated discovery lists and its own
 * legacy /apis does not: kube-apiserver lists a built-in group there only
 * while its APIService exists in the shared etcd, registered seconds after it
 * answers ready, and in skew an apiserver that does not serve a group-version
 * deletes its APIService when it starts (kube-aggregator autoregister), for
 * good. Shown for contrast (what a legacy client gets with no proxy); the
 * sidecar lists them anyway (AggregatedPeerPart localBuiltIn).
 */
let legacyLacks = new Map<string, string[]>();

async function apiserversSettled(): Promise<void> {
  legacyLacks = new Map(
    await Promise.all(
      state.apiservers.map(async (a) => {
        const own = await aggregatedView(state.ca, a.direct, token, 'nopeer');
        return [a.name, missingNames(await legacyGroupVersions(state.ca, a.direct, token), own.groupVersions)] as const;
      }),
    ),
  );
}

async function observe(a: SandboxApiserverState): Promise<SidecarObservation> {
  const sidecar = a.sidecar ?? '';
  const kubeconfig = a.kubeconfig.sidecar ?? '';
  const ownBefore = await legacyDocumentNames(state.ca, a.direct, token);
  const aggregated = await aggregatedView(state.ca, sidecar, token);
  const reports = { json: await runLegacyClient(client, kubeconfig, 'json'), protobuf: await runLegacyClient(client, kubeconfig, 'protobuf') };
  const ownAfter = await legacyDocumentNames(state.ca, a.direct, token);
  const direct = await runLegacyClient(client, a.kubeconfig.direct, 'json');
  const listable = [...new Set(FORMATS.flatMap((f) => listableResources(reports[f])))];
  const api = tokenClient(state, sidecar, token);
  const lists = await Promise.all(
    listable.map(async (name) => {
      const res = await api('GET', listPath(name));
      return { name, status: res.status, body: res.body.slice(0, 160) };
    }),
  );
  const own = ownBefore.names.filter((n) => ownAfter.names.includes(n));
  return { apiserver: a.name, reports, own, unserved: ownAfter.unserved, direct, aggregated, lists };
}

async function observeEverySidecar(): Promise<SidecarObservation[]> {
  return Promise.all(state.apiservers.map((a) => observe(a)));
}

/** One failure line per sidecar and format that `check` finds wrong. */
function failuresOf(observed: readonly SidecarObservation[], check: (o: SidecarObservation, report: LegacyClientReport) => string | undefined): string[] {
  return observed.flatMap((o) =>
    FORMATS.flatMap((format) => {
      const wrong = check(o, o.reports[format]);
      return wrong === undefined ? [] : [`${o.apiserver}'s sidecar (${format}): ${wrong}`];
    }),
  );
}

function specify(window: string, observed: () => SidecarObservation[]): void {
  test(`${window}: ServerGroupsAndResources returns no error through every sidecar, in JSON and protobuf`, (t) => {
    for (const o of observed()) {
      const unserved = o.unserved.length === 0 ? '' : `; its /apis lists ${o.unserved.join(', ')}, which it answers 404`;
      t.diagnostic(`${o.apiserver} directly, no sidecar: ${o.direct.error ?? 'no error'}${unserved}`);
      for (const f of FORMATS) {
        const r = o.reports[f];
        t.diagnostic(
          `${o.apiserver} ${f}: ${r.groups.length} groups, ${legacyClientNames(r).length} entries, ${r.responses.length} responses in ${r.millis} ms`,
        );
      }
    }
    assert.deepEqual(
      failuresOf(observed(), (_o, r) => (r.error === undefined ? undefined : `${r.error} ${JSON.stringify(r.failedGroupVersions ?? {})}`)),
      [],
    );
  });

  test(`${window}: it lists every resource and subresource entry the sidecar's own apiserver lists in its legacy documents`, () => {
    assert.deepEqual(
      failuresOf(observed(), (o, r) => {
        const missing = missingNames(legacyClientNames(r), o.own);
        return missing.length === 0 ? undefined : `lacks what its apiserver lists: ${missing.join(', ')}`;
      }),
      [],
    );
  });

  test(`${window}: it lists every group, version, resource and subresource the merged aggregated discovery through the same sidecar lists`, (t) => {
    // Not asserted (the routes decide what a peer answers), shown to explain a failure: what peers list directly that the view lacks.
    for (const o of observed()) {
      const peers = observed().filter((p) => p !== o);
      const absent = missingNames(legacyClientNames(o.reports.json), [...new Set(peers.flatMap((p) => p.own))]);
      t.diagnostic(`${o.apiserver}'s sidecar lacks of what its peers list directly: ${absent.length === 0 ? 'nothing' : absent.join(', ')}`);
    }
    for (const [apiserver, gvs] of legacyLacks) {
      if (gvs.length > 0) t.diagnostic(`${apiserver}'s own legacy /apis lacked ${gvs.join(', ')}, which its aggregated discovery lists (at the start)`);
    }
    assert.deepEqual(
      failuresOf(observed(), (o, r) => {
        const missing = missingNames(legacyClientNames(r), o.aggregated.names);
        return missing.length === 0 ? undefined : `lacks what aggregated discovery lists: ${missing.join(', ')}`;
      }),
      [],
    );
  });

  test(`${window}: each group's preferredVersion is the group's first version in the merged aggregated discovery`, () => {
    assert.deepEqual(
      failuresOf(observed(), (o, r) => {
        const wrong = [...o.aggregated.firstVersions].flatMap(([group, first]) => {
          const preferred = r.groups.find((g) => g.name === group)?.preferredVersion;
          return preferred === first ? [] : [`${group === '' ? 'core' : group}: ${preferred ?? 'no group'} (aggregated first: ${first})`];
        });
        return wrong.length === 0 ? undefined : `preferredVersion differs: ${wrong.join(', ')}`;
      }),
      [],
    );
  });

  test(`${window}: in protobuf, /api, /apis and every APIResourceList are answered in protobuf and read as the JSON ones are`, () => {
    const wrong = observed().flatMap((o) => {
      const [json, pb] = [o.reports.json, o.reports.protobuf];
      const docs = pb.protobufDocuments;
      if (docs === undefined || docs.error !== undefined) return [`${o.apiserver}: /api and /apis in protobuf: ${docs?.error ?? 'not read'}`];
      const out: string[] = [];
      if (!docs.apiContentType.startsWith(PROTOBUF) || !docs.apisContentType.startsWith(PROTOBUF))
        out.push(`${o.apiserver}: /api answered ${docs.apiContentType}, /apis ${docs.apisContentType}`);
      const resourceLists = pb.responses.filter((r) => /^\/api\/[^/]+$|^\/apis\/[^/]+\/[^/]+$/.test(r.path));
      const notProtobuf = resourceLists.filter((r) => !r.contentType.startsWith(PROTOBUF)).map((r) => `${r.path} (${r.status} ${r.contentType})`);
      if (notProtobuf.length > 0) out.push(`${o.apiserver}: APIResourceLists not in protobuf: ${notProtobuf.join(', ')}`);
      const jsonCore = json.groups.find((g) => g.name === '');
      try {
        assert.deepEqual(docs.coreVersions, jsonCore?.versions ?? []);
        assert.deepEqual(
          docs.groups,
          json.groups.filter((g) => g.name !== ''),
        );
        assert.deepEqual(legacyClientNames(pb), legacyClientNames(json));
      } catch (err) {
        out.push(`${o.apiserver}: protobuf differs from JSON: ${(err as Error).message.slice(0, 2000)}`);
      }
      return out;
    });
    assert.deepEqual(wrong, []);
  });

  test(`${window}: every resource it lists with the list verb answers a LIST through that sidecar with 200`, (t) => {
    const lists = observed().flatMap((o) => o.lists.map((l) => ({ ...l, apiserver: o.apiserver })));
    t.diagnostic(`${lists.length} LISTs`);
    assert.deepEqual(
      lists.filter((l) => l.status !== 200).map((l) => `${l.apiserver}'s sidecar: LIST ${l.name}: ${l.status} ${l.body}`),
      [],
    );
  });
}

describe('client-go legacy discovery through every sidecar during skew (v1.36.3 and v1.37.2)', () => {
  describe('control plane up', () => {
    let observed: SidecarObservation[] = [];
    before(async () => {
      await controlPlaneInSync(tb, ['kas-a', 'kas-b']);
      observed = await observeEverySidecar();
    });
    specify('control plane up', () => observed);
  });

  describe('control plane paused (SIGSTOP)', () => {
    let observed: SidecarObservation[] = [];
    before(async () => {
      await controlPlaneInSync(tb, ['kas-a', 'kas-b']);
      tb.sandbox.pauseControlPlane();
      try {
        observed = await observeEverySidecar();
      } finally {
        tb.sandbox.resumeControlPlane();
      }
    });
    specify('control plane paused', () => observed);
  });
});
