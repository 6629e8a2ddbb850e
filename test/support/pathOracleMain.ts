// The path oracle as a command (`npm run oracle`): more cases than the test
// suite sends (pathOracle.ts says what is compared). Run
//   node dist/test/support/pathOracleMain.js --cases 5000 [--seed 7]
// (`npm run oracle -- --cases 5000`): it starts its own sandbox with audit
// logs, prints the counts and every disagreement, and exits 1 if there is one.
import { pathToFileURL } from 'node:url';
import { generatedCases, handPickedCases } from './pathOracleCases.js';
import { ORACLE_APISERVERS } from './pathOracleFixtures.js';
import { runPathOracle } from './pathOracle.js';
import { formatOracleReport } from './pathOracleReport.js';
import { startTestSandbox } from './sandbox.js';

/** `--cases N` generated cases (default 2000) from `--seed S` (default 10), plus the regression table. */
async function main(argv: string[]): Promise<number> {
  const option = (name: string, fallback: number): number => {
    const at = argv.indexOf(`--${name}`);
    const value = at === -1 ? fallback : Number(argv[at + 1]);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} wants a whole number`);
    return value;
  };
  const cases = [...handPickedCases(), ...generatedCases(option('cases', 2000), option('seed', 10))];
  process.stderr.write(`starting a sandbox (${ORACLE_APISERVERS.map((x) => `${x.name} ${x.version}`).join(', ')}) with audit logs...\n`);
  const tb = await startTestSandbox(ORACLE_APISERVERS, { auditLogs: true });
  try {
    const report = await runPathOracle(tb, cases, { log: (line) => process.stderr.write(`${line}\n`) });
    process.stdout.write(`${formatOracleReport(report)}\n`);
    return report.disagreements.length === 0 ? 0 : 1;
  } finally {
    await tb.sandbox.down();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(2);
    },
  );
}
