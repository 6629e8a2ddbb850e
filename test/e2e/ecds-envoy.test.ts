// What a real Envoy (the installed 1.40, the sidecar bootstrap as the product
// writes it) does when a document filter's configuration is left out of an
// ECDS response and then comes back (the product never leaves one out:
// translator/documentFilters.ts `documentDelivery`; these pin why a
// left-out configuration would be kept, and docs/never-worse.md, "Merged
// documents", cites them), and what it does with the empty configuration the
// product sends instead. Each response here also carries a module upgrade (the
// identity filter's configuration changes), as a change of the filter module
// does in the product.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { AckEvent, NackEvent } from '../../src/servers/ads.js';
import { translateSidecar, type SidecarDocuments } from '../../src/translator/translator.js';
import { makeSnapshot, TYPE_URL } from '../../src/xds/snapshot.js';
import { eventually } from '../support/envoy.js';
import type { AggregatedPeerPart } from '../../src/discovery/peerPart.js';
import { group, list } from '../support/discoveryFixtures.js';
import { expectedEtag } from '../support/documentFilterHarness.js';
import { AGGREGATED, GROUPS_PART, KNOWN_TOKEN, NODE, envoyStat, localEtag, peerPartDocuments, send, sidecar, useEchoSidecar } from '../support/echoSidecar.js';

useEchoSidecar();

const GROUPS = 'extension_config_discovery.http_filter.mvproxy.discovery.groups';
const IDENTITY = 'extension_config_discovery.http_filter.mvproxy.identity';

/** The module with a custom section appended: other bytes (a new module to Envoy), the same code. */
function upgradedModule(module: Uint8Array, mark: string): Buffer {
  const name = Buffer.from('mvproxy-test');
  const payload = Buffer.from(mark);
  const content = Buffer.concat([Buffer.from([name.length]), name, payload]);
  return Buffer.concat([module, Buffer.from([0, content.length]), content]);
}

/** The `/apis` peer part named by `mark` (a newer set than the one the sidecar started with). */
function partWith(mark: string): AggregatedPeerPart {
  return { document: 'group-discovery', groups: list([group(`${mark.replaceAll('"', '')}.example.com`, [{ version: 'v1', resources: [] }])]).items };
}

/** The documents whose `/apis` peer part is `mark`'s. */
function groupsWith(mark: string): SidecarDocuments {
  return peerPartDocuments(undefined, partWith(mark));
}

/** The ETag the sidecar answers `/apis` with while it holds `mark`'s peer part. */
function etagOf(mark: string): string {
  return expectedEtag(localEtag('groups'), partWith(mark));
}

/** The ETag of the answer merged with the part the sidecar started with. */
const MERGED_ETAG = expectedEtag(localEtag('groups'), GROUPS_PART);

/** Pushes the sidecar's plan with these documents and filter module; `leftOut`: a filter configuration taken out of the response. */
function push(documents: SidecarDocuments, module: Uint8Array, leftOut?: string): string {
  const resources = translateSidecar(sidecar.plan, { ...sidecar.settings, filterModule: Buffer.from(module) }, undefined, documents);
  const snapshot = makeSnapshot({ ...resources, extensionConfigs: resources.extensionConfigs.filter((c) => c.name !== leftOut) });
  sidecar.ads.setSnapshot(NODE, snapshot);
  return snapshot.types[TYPE_URL.extensionConfig].version;
}

/** Waits for Envoy's answer to an ECDS version: the ACK, or fails with the NACK's message. */
async function ecdsAcked(version: string, acks: AckEvent[], nacks: NackEvent[]): Promise<void> {
  await eventually(`ECDS ${version} answered`, 20_000, () => {
    const nack = nacks.find((n) => n.typeUrl === TYPE_URL.extensionConfig && n.version === version);
    if (nack) assert.fail(`ECDS ${version} NACKed: ${nack.message}`);
    return acks.some((a) => a.typeUrl === TYPE_URL.extensionConfig && a.version === version) ? true : undefined;
  });
}

/** The ETag of the `/apis` answer through the sidecar. */
async function servedEtag(): Promise<string> {
  const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN } });
  assert.equal(reply.status, 200);
  return String(reply.headers['etag']);
}

interface EcdsDumpEntry {
  name: string;
  version: string;
  type: string;
}

async function ecdsDump(): Promise<EcdsDumpEntry[]> {
  const dump = JSON.parse((await sidecar.envoy.admin('/config_dump?resource=ecds_filters')).body) as {
    configs?: Array<{ version_info?: string; ecds_filter?: { name?: string; typed_config?: { '@type'?: string } } }>;
  };
  return (dump.configs ?? []).map((c) => ({
    name: c.ecds_filter?.name ?? '?',
    version: c.version_info ?? '',
    type: c.ecds_filter?.typed_config?.['@type'] ?? '',
  }));
}

describe('a document filter configuration left out of an ECDS response, then back', () => {
  test('Envoy accepts every response, keeps the configuration left out, and never serves an older set after a newer one', async (t) => {
    const acks: AckEvent[] = [];
    const nacks: NackEvent[] = [];
    sidecar.ads.on('ack', (a) => acks.push(a));
    sidecar.ads.on('nack', (n) => nacks.push(n));
    const module = sidecar.settings.filterModule;

    // A newer `/apis` set than the one the sidecar started with.
    const v2 = push(groupsWith('"set-2"'), module);
    await ecdsAcked(v2, acks, nacks);
    await eventually('set-2 served', 10_000, async () => ((await servedEtag()) === etagOf('"set-2"') ? true : undefined));
    const reloadsBefore = await envoyStat(`${GROUPS}.config_reload`);
    const successesBefore = await envoyStat(`${GROUPS}.update_success`);
    const groupsVersion = (dump: EcdsDumpEntry[]): string | undefined => dump.find((e) => e.name === 'mvproxy.discovery.groups')?.version;
    const keptVersion = groupsVersion(await ecdsDump());

    // Without the `/apis` configuration, with a module upgrade in the same response.
    const v3 = push(groupsWith('"set-2"'), upgradedModule(module, 'upgrade-1'), 'mvproxy.discovery.groups');
    await ecdsAcked(v3, acks, nacks);
    await eventually('the identity filter reloaded', 10_000, async () => ((await envoyStat(`${IDENTITY}.config_reload`)) >= 2 ? true : undefined));
    const during: string[] = [];
    for (let i = 0; i < 20; i++) during.push(await servedEtag());
    const dumpLeftOut = await ecdsDump();
    t.diagnostic(`left out: served ${[...new Set(during)].join(',')}; config dump ${JSON.stringify(dumpLeftOut)}`);
    // Envoy (its default SotW mux) does not even call the left-out subscription: it keeps its configuration and version.
    assert.equal(await envoyStat(`${GROUPS}.config_reload`), reloadsBefore, 'the left-out configuration is not reloaded');
    assert.equal(await envoyStat(`${GROUPS}.update_success`), successesBefore, 'the left-out subscription saw no update');
    assert.equal(groupsVersion(dumpLeftOut), keptVersion, 'the config dump keeps the left-out configuration at its version');

    // Back, newer again, with another module upgrade.
    const v4 = push(groupsWith('"set-3"'), upgradedModule(module, 'upgrade-2'));
    await ecdsAcked(v4, acks, nacks);
    await eventually('set-3 served', 10_000, async () => ((await servedEtag()) === etagOf('"set-3"') ? true : undefined));
    assert.equal(groupsVersion(await ecdsDump()), v4);
    assert.equal(await envoyStat(`${GROUPS}.config_reload`), reloadsBefore + 1, 'applied again once back');

    assert.deepEqual(
      nacks.map((n) => `${n.typeUrl} ${n.message}`),
      [],
      'no response NACKed',
    );
    assert.equal(await envoyStat(`${GROUPS}.config_fail`), 0);
    for (const etag of during) assert.notEqual(etag, MERGED_ETAG, 'never the older set after a newer one was accepted');
    assert.ok(
      during.every((etag) => etag === etagOf('"set-2"')),
      `kept set-2 while left out, served ${during.join(',')}`,
    );
  });

  test('a control plane that reconnects without the configuration (as one restarted cold would) leaves the sidecar its documents', async () => {
    const acks: AckEvent[] = [];
    const nacks: NackEvent[] = [];
    sidecar.ads.on('ack', (a) => acks.push(a));
    sidecar.ads.on('nack', (n) => nacks.push(n));
    const held = await servedEtag();
    const reloadsBefore = await envoyStat(`${GROUPS}.config_reload`);
    const successesBefore = await envoyStat(`${GROUPS}.update_success`);
    // Envoy reconnects (a new stream, as to a restarted control plane) and is answered without the `/apis` configuration.
    sidecar.ads.closeStreams();
    const version = push(groupsWith('"unused"'), upgradedModule(sidecar.settings.filterModule, 'upgrade-3'), 'mvproxy.discovery.groups');
    await ecdsAcked(version, acks, nacks);
    for (let i = 0; i < 10; i++) assert.equal(await servedEtag(), held);
    // (Its update_attempt counts the request Envoy sent on the new stream; no update reached it.)
    assert.equal(await envoyStat(`${GROUPS}.config_reload`), reloadsBefore, 'the left-out configuration is not reloaded');
    assert.equal(await envoyStat(`${GROUPS}.update_success`), successesBefore, 'the left-out subscription saw no update');
    assert.equal(await envoyStat(`${GROUPS}.update_rejected`), 0);
    assert.deepEqual(nacks, []);
  });

  test('a document the control plane holds no set for gets the empty configuration: ACKed, and the local answer goes through untouched', async () => {
    const acks: AckEvent[] = [];
    const nacks: NackEvent[] = [];
    sidecar.ads.on('ack', (a) => acks.push(a));
    sidecar.ads.on('nack', (n) => nacks.push(n));
    const reloadsBefore = await envoyStat(`${GROUPS}.config_reload`);
    const withoutGroups = new Map(groupsWith('"unused"'));
    withoutGroups.delete('group-discovery');
    const version = push(withoutGroups, sidecar.settings.filterModule);
    await ecdsAcked(version, acks, nacks);
    await eventually('the empty configuration applied', 10_000, async () => ((await envoyStat(`${GROUPS}.config_reload`)) > reloadsBefore ? true : undefined));
    assert.equal(await servedEtag(), localEtag('groups'), "the local apiserver's own answer, its ETag");
    assert.equal(await envoyStat(`${GROUPS}.config_fail`), 0);
    assert.deepEqual(nacks, []);
    sidecar.push(peerPartDocuments());
  });
});
