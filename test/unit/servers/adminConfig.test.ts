// `mvproxy admin config`: what the control plane pushed to one sidecar
// (servers/adminConfig.ts), and how the CLI shows it (cli/adminConfig.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { resourceJson, sidecarConfig } from '../../../src/servers/adminConfig.js';
import { configDocument, configTypeUrl, formatConfig } from '../../../src/cli/adminConfig.js';
import { translateSidecar } from '../../../src/translator/translator.js';
import { makeSnapshot, PUSH_ORDER, TYPE_URL, type ResourceTypeUrl } from '../../../src/xds/snapshot.js';
import type { AdsNodeStatus } from '../../../src/servers/ads.js';
import { REROUTES } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-admin-config-');
const snapshot = makeSnapshot(translateSidecar(REROUTES, settings));

function acked(versions: Partial<Record<ResourceTypeUrl, string>>, connected = 1): AdsNodeStatus {
  const types: AdsNodeStatus['types'] = {};
  for (const [url, version] of Object.entries(versions)) types[url as ResourceTypeUrl] = { versionAcked: version, subscribed: [] };
  return { sidecar: 'a', connected, types };
}

describe('GetConfig answer', () => {
  it('gives every type in push order with the version pushed and the one the sidecar ACKed here', () => {
    const config = sidecarConfig('a', snapshot, acked({ [TYPE_URL.route]: 'old' }));
    assert.deepEqual(
      config.types?.map((t) => t.type_url),
      [...PUSH_ORDER],
    );
    const routes = config.types?.find((t) => t.type_url === TYPE_URL.route);
    assert.equal(routes?.version, snapshot.types[TYPE_URL.route].version);
    assert.equal(routes?.version_acked, 'old');
  });

  it('gives one type only when asked', () => {
    const config = sidecarConfig('a', snapshot, undefined, TYPE_URL.listener);
    assert.deepEqual(
      config.types?.map((t) => t.type_url),
      [TYPE_URL.listener],
    );
  });

  it('says nothing of ACKs when the sidecar streams from no stream of this replica', () => {
    const config = sidecarConfig('a', snapshot, acked({ [TYPE_URL.route]: 'old' }, 0));
    assert.ok(config.types?.every((t) => t.version_acked === ''));
  });

  it('each resource is its JSON, the filter module as base64 bytes', () => {
    const identity = snapshot.types[TYPE_URL.extensionConfig].resources.get('mvproxy.identity');
    assert.ok(identity);
    const json = resourceJson(identity);
    assert.ok(!json.includes('"type":"Buffer"'), 'no Buffer serialization');
    assert.ok(json.includes(Buffer.from(settings.filterModule).toString('base64')));
  });
});

describe('mvproxy admin config output', () => {
  const config = (only?: ResourceTypeUrl) => {
    const c = sidecarConfig('a', snapshot, acked({}), only);
    return {
      sidecar: c.sidecar ?? '',
      types: (c.types ?? []).map((t) => ({
        type_url: t.type_url ?? '',
        version: t.version ?? '',
        version_acked: t.version_acked ?? '',
        resources_json: t.resources_json ?? [],
      })),
    };
  };

  it('--type takes the plural short names and refuses others, listing them', () => {
    assert.equal(configTypeUrl('routes'), TYPE_URL.route);
    assert.equal(configTypeUrl('clusters'), TYPE_URL.cluster);
    assert.equal(configTypeUrl('secrets'), TYPE_URL.secret);
    assert.throws(() => configTypeUrl('secret'), /--type: one of clusters, endpoints, listeners, routes, secrets, filters; got "secret"/);
  });

  it('the routes table shows each route with what it matches and the cluster it goes to', () => {
    const text = formatConfig(config(TYPE_URL.route), 'table');
    assert.match(text, /^# routes version \S+ \(not ACKed here\)$/m);
    const svm = text.split('\n').find((line) => line.includes('storageversionmigrations'));
    assert.ok(svm, text);
    assert.match(svm, /\bc\b|peers/);
  });

  it('the listeners table shows the listening address', () => {
    assert.match(formatConfig(config(TYPE_URL.listener), 'table'), /127\.0\.0\.1:6443|0\.0\.0\.0:6443|:6443/);
  });

  it('the secrets table names the files each secret reads, never their content', () => {
    const text = formatConfig(config(TYPE_URL.secret), 'table');
    assert.match(text, /^client-ca\s+CA bundle\s+\S+/m);
    assert.match(text, /^apiserver-serving\s+certificate\s+\S+, \S+/m);
    assert.doesNotMatch(text, /BEGIN/);
  });

  it('-o json and -o yaml give the same document, every resource in full', () => {
    const doc = configDocument(config());
    assert.deepEqual(JSON.parse(formatConfig(config(), 'json')), doc);
    assert.deepEqual(parseYaml(formatConfig(config(), 'yaml')), doc);
  });
});
