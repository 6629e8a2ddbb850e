// The planner's golden cases, the upstream half of the translator's
// (test/golden/translator: plan -> Envoy): for each request rule of the first
// table of docs/request-rules.md, the smallest cluster model that shows it
// and the plan the planner makes of it for one sidecar.
//
//   test/golden/planner/<rule>.model.json   what the case shows, the sidecar (node), the operator's drains,
//                                          a request and the model
//   test/golden/planner/<rule>.plan.json    the sidecar's plan
//
// Each case's request is decided by the case's rule under its plan (planner/destination.ts), so the
// case shows that rule. After an intended change to the planner, regenerate the plans and review the diff:
//
//   npm run golden:update    # also runs this test with MVPROXY_UPDATE_GOLDEN=1
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import type { ClusterModel } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { parseRequestPath } from '../../../src/model/requestInfo.js';
import { decisionForRequest } from '../../../src/planner/destination.js';
import type { SidecarPlan } from '../../../src/planner/plan.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { REPO, shown } from '../../support/goldenCases.js';
import { firstDifference, jsonText, type Json } from '../../support/goldenJson.js';

const UPDATE = process.env['MVPROXY_UPDATE_GOLDEN'] === '1';
const DIR = join(REPO, 'test', 'golden', 'planner');
/** The departed grace every case is planned with (the default departedGraceSeconds). */
const DEPARTED_GRACE_MS = 300_000;

interface PlannerCase {
  what: string;
  /** The sidecar whose plan the case shows. */
  node: string;
  /** Apiservers the operator drains. */
  draining?: string[];
  /** A request the case's rule decides under the plan. */
  request: { path: string; peerProxied?: boolean };
  model: ClusterModel;
}

/** The rule names of the first table of docs/request-rules.md (where a request goes). */
function requestRules(): string[] {
  const doc = readFileSync(join(REPO, 'docs', 'request-rules.md'), 'utf8');
  const table = doc.slice(doc.indexOf('## The rules'), doc.indexOf('How requests travel'));
  return [...table.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1] ?? '');
}

function planOf(c: PlannerCase): SidecarPlan {
  const plans = planSidecars(c.model, { standings: apiserverStandings(c.model, DEPARTED_GRACE_MS), draining: new Set(c.draining ?? []) });
  const plan = plans.find((p) => p.node === c.node);
  assert.ok(plan, `a plan for ${c.node}`);
  return plan;
}

const names = existsSync(DIR)
  ? readdirSync(DIR)
      .filter((file) => file.endsWith('.model.json'))
      .map((file) => file.slice(0, -'.model.json'.length))
      .sort()
  : [];

describe('planner golden cases (test/golden/planner)', () => {
  for (const name of names) {
    const c = JSON.parse(readFileSync(join(DIR, `${name}.model.json`), 'utf8')) as PlannerCase;
    const rule = requestRules().find((r) => name === r || name.startsWith(`${r}-`));

    test(`${name}: ${c.what}`, () => {
      const plan = planOf(c);
      const path = join(DIR, `${name}.plan.json`);
      const text = jsonText(plan as unknown as Json);
      if (UPDATE) {
        if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
      } else {
        assert.ok(existsSync(path), `${shown(path)} is missing; write it with \`npm run golden:update\` and review it`);
        const expected = readFileSync(path, 'utf8');
        assert.ok(expected === text, `${shown(path)} differs from the planner's plan: ${firstDifference(expected, text)}`);
      }
      const decision = decisionForRequest(plan, parseRequestPath(c.request.path), { alreadyProxied: c.request.peerProxied ?? false });
      assert.equal(decision.rule, rule, `${c.request.path} is decided by the case's rule`);
    });
  }

  test('every rule of the first table of docs/request-rules.md has a case named after it', () => {
    const missing = requestRules().filter((rule) => !names.some((name) => name === rule || name.startsWith(`${rule}-`)));
    assert.deepEqual(missing, [], `rules without a case in ${shown(DIR)} (<rule>.model.json)`);
  });

  test('the directory holds the cases and nothing else', () => {
    const expected = new Set([...names.flatMap((name) => [`${name}.model.json`, `${name}.plan.json`]), 'README.md']);
    assert.deepEqual(
      readdirSync(DIR).filter((file) => !expected.has(file)),
      [],
    );
  });
});
