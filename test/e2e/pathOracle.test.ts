// The apiserver as oracle (issue 10): real kube-apiservers read every path of
// the regression table and a few hundred generated ones sent through the
// v1.36.3 apiserver's sidecar; mvproxy must read and route each as they do
// (test/support/pathOracle.ts says what is compared). More cases:
// `npm run oracle -- --cases 5000`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { runPathOracle } from '../support/pathOracle.js';
import { ORACLE_APISERVERS } from '../support/pathOracleFixtures.js';
import { describeFinding, formatOracleReport, type OracleReport } from '../support/pathOracleReport.js';
import { generatedCases, handPickedCases } from '../support/pathOracleCases.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';

/** Generated cases in the suite, and their seed: the same paths on every run. */
const GENERATED = 300;
const SEED = 10;

/** The one result for a path of the table. */
function resultFor(report: OracleReport, path: string) {
  const result = report.results.find((r) => r.case.path === path);
  assert.ok(result, path);
  return result;
}

describe('the apiserver as oracle: paths through the v1.36.3 sidecar, read by v1.36.3 and v1.37.2', () => {
  let tb: TestSandbox;
  before(async () => {
    tb = await startTestSandbox(ORACLE_APISERVERS, { auditLogs: true });
  });
  after(() => tb?.sandbox.down());

  it('mvproxy reads and routes the regression table as the apiservers read it', async (t) => {
    const cases = handPickedCases();
    const report = await runPathOracle(tb, cases);
    for (const line of formatOracleReport(report).split('\n')) t.diagnostic(line);
    assert.equal(report.results.length, cases.length);
    assert.deepEqual(report.disagreements.map(describeFinding), []);
    // Issue 10's two requests: the cronjob is read and served locally, the peer-only resource by the peer.
    const cronjobs = resultFor(report, '/apis/batch/v1/namespaces/x%2Fcronjobs/jobs');
    assert.deepEqual(
      cronjobs.readings.map((r) => [r.apiserver, r.objectRef?.resource]),
      [['kas-a', 'cronjobs']],
    );
    const migrations = resultFor(report, '/apis/storagemigration.k8s.io/v1%2Fstorageversionmigrations');
    assert.deepEqual(
      migrations.readings.map((r) => [r.apiserver, r.objectRef?.resource]),
      [['kas-b', 'storageversionmigrations']],
    );
    assert.equal(migrations.viaSidecar.status, 200);
    // A name with a backslash (legal for RBAC) is read through the sidecar as directly.
    assert.equal(resultFor(report, '/apis/rbac.authorization.k8s.io/v1/clusterroles/oracle%5Cbackslash').viaSidecar.status, 200);
    // Names spelled with escapes of unreserved characters go where their spelling sends them; never refused.
    assert.ok(report.literalSpellings.every((f) => f.kind === 'reading' || f.kind === 'apiserver-reading'));
  });

  it(`mvproxy reads and routes ${GENERATED} generated paths (seed ${SEED}) as the apiservers read them`, async (t) => {
    const cases = generatedCases(GENERATED, SEED);
    const report = await runPathOracle(tb, cases);
    for (const line of formatOracleReport(report).split('\n')) t.diagnostic(line);
    assert.equal(report.results.length, cases.length);
    assert.deepEqual(report.disagreements.map(describeFinding), []);
    assert.ok(report.literalSpellings.every((f) => f.kind === 'reading' || f.kind === 'apiserver-reading'));
  });
});
