// The translator's golden cases on disk (test/golden/translator/): each case
// a directory with the input (input.json: the plan, and settings beyond the
// default ones) and the translator's output, one file per resource type; the
// parts every case shares in _shared/ (goldenShared.ts).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { planOf } from './sidecarPlans.js';
import { translateSidecar, type EnvoyResources, type TranslatorSettings } from '../../src/translator/translator.js';
import { canonical, isObject, jsonText, merged, withBytes, type Json } from './goldenJson.js';
import { RESOURCE_TYPES, SHARED_TYPES, sharedFromFiles, sharedValues, type ResourceFiles, type ResourceType, type SharedValues } from './goldenShared.js';
import { settingsFilePaths, sidecarSettings, type SidecarFiles } from './translatorFixtures.js';

/** The repository root (this file runs as dist/test/support/goldenCases.js). */
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const GOLDEN_DIR = join(REPO, 'test', 'golden', 'translator');
export const SHARED_DIR = join(GOLDEN_DIR, '_shared');
export const REGENERATE = 'npm run golden:update';

/** A path as the repository knows it, for messages. */
export function shown(path: string): string {
  return relative(REPO, path);
}

/**
 * Fixed fake certificate paths: the translator copies settings paths into its
 * output, so golden files translated with these do not depend on the machine.
 * (Envoy validation swaps them for throwawaySettings' real files.)
 */
const FIXED_FILES: SidecarFiles = {
  servingCert: '/etc/mvproxy/pki/serving.crt',
  servingKey: '/etc/mvproxy/pki/serving.key',
  clientCa: '/etc/mvproxy/pki/client-ca.crt',
  frontProxyCert: '/etc/mvproxy/pki/front-proxy.crt',
  frontProxyKey: '/etc/mvproxy/pki/front-proxy.key',
  peerCa: '/etc/mvproxy/pki/peer-ca.crt',
};

/** The settings every case starts from (written to _shared/settings.json): fixed paths, the real filter module. */
export const DEFAULT_SETTINGS: TranslatorSettings = sidecarSettings(6443, FIXED_FILES);
const MODULE = DEFAULT_SETTINGS.filterModule;

/** The plan the shared parts are taken from: sidecar a with one peer, b, that batch/v1 jobs goes to. */
const BASELINE_PLAN: SidecarPlan = planOf({
  node: 'a',
  local: { name: 'a', address: { host: '10.0.0.1', port: 6443 } },
  peers: [{ name: 'b', address: { host: '10.0.0.2', port: 6443 } }],
  routes: [{ group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b'] } }],
});

export interface GoldenCase {
  /** The directory's name: the rule or behaviour it shows. */
  name: string;
  dir: string;
  /** What the case shows, for test names and reviewers. */
  what: string;
  plan: SidecarPlan;
  settings: TranslatorSettings;
  /** Shared parts this case writes out in full, because they are what it shows. */
  expand: ReadonlySet<string>;
}

/** The case directories, by name (every directory but _shared). */
export function caseNames(): string[] {
  if (!existsSync(GOLDEN_DIR)) return [];
  return readdirSync(GOLDEN_DIR)
    .filter((name) => !name.startsWith('_') && statSync(join(GOLDEN_DIR, name)).isDirectory())
    .sort();
}

/** Files in the golden directory that belong to no case (the old one-file-per-case layout, say). */
export function strayTopLevelFiles(): string[] {
  if (!existsSync(GOLDEN_DIR)) return [];
  return readdirSync(GOLDEN_DIR).filter((name) => !statSync(join(GOLDEN_DIR, name)).isDirectory() && name !== 'README.md');
}

/** The files a case directory holds: its input and one file per resource type. */
export const CASE_FILES: readonly string[] = ['input.json', ...RESOURCE_TYPES.map((type) => `${type}.json`)];

export function readCase(name: string): GoldenCase {
  const dir = join(GOLDEN_DIR, name);
  const inputPath = join(dir, 'input.json');
  assert.ok(existsSync(inputPath), `${shown(dir)} has no input.json: write one (what, plan, optional settings and expand) or remove the directory`);
  const input = JSON.parse(readFileSync(inputPath, 'utf8')) as Json;
  assert.ok(isObject(input), `${shown(inputPath)} holds an object`);
  const unknown = Object.keys(input).filter((key) => !['what', 'plan', 'settings', 'expand'].includes(key));
  assert.deepEqual(unknown, [], `${shown(inputPath)}: fields other than what, plan, settings, expand`);
  const { what, plan, settings, expand } = input;
  assert.ok(typeof what === 'string' && what !== '', `${shown(inputPath)}: what (a sentence) is missing`);
  assert.ok(isObject(plan) && ['node', 'local', 'peers', 'entries', 'localEntries'].every((key) => key in plan), `${shown(inputPath)}: plan is a SidecarPlan`);
  assert.ok(expand === undefined || (Array.isArray(expand) && expand.every((e) => typeof e === 'string')), `${shown(inputPath)}: expand lists names`);
  const withDefaults = merged(canonical(DEFAULT_SETTINGS, MODULE, 'settings'), settings);
  return {
    name,
    dir,
    what,
    plan: plan as unknown as SidecarPlan,
    settings: withBytes(withDefaults, MODULE, new Map()) as TranslatorSettings,
    expand: new Set((expand ?? []) as string[]),
  };
}

/** What the translator makes of a plan, as canonical data by resource type. */
export function translated(plan: SidecarPlan, settings: TranslatorSettings, name: string): ResourceFiles {
  const resources = translateSidecar(plan, settings);
  const files = Object.fromEntries(RESOURCE_TYPES.map((type) => [type, canonical(resources[type], MODULE, `${name}.${type}`)]));
  return files as ResourceFiles;
}

/** The shared parts as the translator makes them now. */
export function currentSharedValues(): SharedValues {
  return sharedValues(translated(BASELINE_PLAN, DEFAULT_SETTINGS, 'baseline'));
}

/** A golden file's text, checked not to depend on the machine that wrote it. */
export function goldenText(value: Json, what: string): string {
  const text = jsonText(value);
  const machinePaths = [REPO.replace(/\/$/, ''), join(tmpdir(), '/'), homedir() === '/' ? undefined : join(homedir(), '/')];
  for (const machinePath of machinePaths) {
    if (machinePath !== undefined) assert.ok(!text.includes(machinePath), `${what}: the output contains the machine-specific path ${machinePath}`);
  }
  return text;
}

/** A golden file's data, or a failure that says how to make it. */
export function readGolden(path: string): Json {
  assert.ok(existsSync(path), `${shown(path)} is missing; create it with \`${REGENERATE}\` and review it`);
  return JSON.parse(readFileSync(path, 'utf8')) as Json;
}

/** The shared parts as _shared/ holds them. */
export function goldenSharedValues(): Map<string, Json> {
  return sharedFromFiles(new Map(SHARED_TYPES.map((type) => [type, readGolden(sharedPath(type))])));
}

export function sharedPath(type: ResourceType | 'settings'): string {
  return join(SHARED_DIR, `${type}.json`);
}

/**
 * A case's resources as Envoy gets them: `files` (references resolved) with
 * bytes back and the fixed fake certificate paths replaced by `realFiles`'
 * (files Envoy can read).
 */
export function envoyResources(goldenCase: GoldenCase, files: ResourceFiles, realFiles: TranslatorSettings): EnvoyResources {
  const real = settingsFilePaths(realFiles);
  const fakeToReal = new Map(settingsFilePaths(goldenCase.settings).map((fake, i) => [fake, real[i] ?? fake]));
  return Object.fromEntries(RESOURCE_TYPES.map((type) => [type, withBytes(files[type], MODULE, fakeToReal)])) as unknown as EnvoyResources;
}
