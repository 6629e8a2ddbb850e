// The package's two commands run as a user runs them after any build: `npx
// mvproxy` (npm's own lookup of the package's bin) and `kubectl-mvproxy`
// executed from PATH as kubectl runs a plugin. The build writes them anew,
// so this catches a build that leaves them without their execute bit.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const bins = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin;

describe("the package's commands after a build", () => {
  it('npx mvproxy --help runs the built CLI', async () => {
    const { stdout } = await run('npx', ['--no-install', 'mvproxy', '--help'], { cwd: REPO });
    assert.match(stdout, /^usage: mvproxy /m);
  });

  it('kubectl-mvproxy runs from PATH, as kubectl runs a plugin', async () => {
    // Linked onto PATH under its bin name, as `npm link` or a global install does.
    const onPath = mkdtempSync(join(tmpdir(), 'mvproxy-bin-'));
    symlinkSync(join(REPO, bins['kubectl-mvproxy'] ?? ''), join(onPath, 'kubectl-mvproxy'));
    const env = { ...process.env, PATH: `${onPath}${delimiter}${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
    const { stdout } = await run('kubectl-mvproxy', ['status', '--help'], { env });
    assert.match(stdout, /^usage: kubectl mvproxy /);
  });

  it('every bin the package declares is executable', async () => {
    for (const [name, path] of Object.entries(bins)) {
      await assert.doesNotReject(run(join(REPO, path), ['--help']), `${name} (${path})`);
    }
  });
});
