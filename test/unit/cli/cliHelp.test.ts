// `--help` works on every command of mvproxy and mvproxy-dev and every admin
// verb, without a sandbox or a control plane; each command line has its own
// commands; and `npm start` ends with what to try next.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ADMIN_VERB_USAGE, COMMAND_USAGE } from '../../../src/cli/usage.js';
import { COMMAND_USAGE as TOOL_COMMAND_USAGE } from '../../../src/tools/cli/usage.js';
import { nextSteps } from '../../../src/tools/sandbox/nextSteps.js';
import type { SandboxState } from '../../../src/tools/sandbox/state.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../../../src/cli/kubectl.js', import.meta.url));
const TOOLS_CLI = fileURLToPath(new URL('../../../src/tools/cli/main.js', import.meta.url));

describe('--help', () => {
  for (const command of Object.keys(COMMAND_USAGE)) {
    it(`mvproxy ${command} --help prints its usage and succeeds`, async () => {
      const { stdout } = await run(process.execPath, [CLI, command, '--help']);
      assert.ok(stdout.startsWith(`usage: mvproxy ${command}`), stdout);
    });
  }

  for (const command of Object.keys(TOOL_COMMAND_USAGE)) {
    it(`mvproxy-dev ${command} --help prints its usage and succeeds`, async () => {
      const { stdout } = await run(process.execPath, [TOOLS_CLI, command, '--help']);
      assert.ok(stdout.startsWith(`usage: mvproxy-dev ${command}`), stdout);
    });
  }

  for (const verb of Object.keys(ADMIN_VERB_USAGE)) {
    it(`mvproxy admin ${verb} --help prints the verb's usage, also through kubectl mvproxy`, async () => {
      const { stdout } = await run(process.execPath, [CLI, 'admin', verb, '--help']);
      assert.match(stdout, new RegExp(`^usage: mvproxy admin \\[--socket PATH\\] ${verb}\\b`));
      const plugin = await run(process.execPath, [PLUGIN, verb, '--help']);
      assert.match(plugin.stdout, new RegExp(`^usage: kubectl mvproxy \\[--socket PATH\\] ${verb}\\b`));
    });
  }

  it('mvproxy help COMMAND is mvproxy COMMAND --help', async () => {
    const [a, b] = await Promise.all([run(process.execPath, [CLI, 'help', 'serve']), run(process.execPath, [CLI, 'serve', '--help'])]);
    assert.equal(a.stdout, b.stdout);
  });

  it('help for an unknown command fails, listing the commands', async () => {
    await assert.rejects(run(process.execPath, [CLI, 'help', 'nope']), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /unknown command "nope"[\s\S]*commands:/);
      return true;
    });
  });

  it('mvproxy help admin is mvproxy admin --help', async () => {
    const [a, b] = await Promise.all([run(process.execPath, [CLI, 'help', 'admin']), run(process.execPath, [CLI, 'admin', '--help'])]);
    assert.equal(a.stdout, b.stdout);
    assert.match(a.stdout, /^usage: mvproxy admin /);
  });

  it('the operator command has no tool commands, and the tools command has no operator commands', async () => {
    for (const tool of Object.keys(TOOL_COMMAND_USAGE)) {
      await assert.rejects(run(process.execPath, [CLI, tool]), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, new RegExp(`^mvproxy: unknown command "${tool}"`));
        return true;
      });
    }
    for (const command of Object.keys(COMMAND_USAGE)) {
      await assert.rejects(run(process.execPath, [TOOLS_CLI, command]), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, new RegExp(`^mvproxy-dev: unknown command "${command}"`));
        return true;
      });
    }
  });

  it('help for a command that is not an own property fails as unknown', async () => {
    await assert.rejects(run(process.execPath, [CLI, 'help', 'constructor']), (err: { code: number }) => err.code === 2);
    await assert.rejects(run(process.execPath, [CLI, 'toString']), (err: { code: number }) => err.code === 2);
  });

  it('an argument after -- is not a request for help', async () => {
    await assert.rejects(run(process.execPath, [CLI, 'admin', '--socket', '/nonexistent.sock', 'explain', 'a', '--', '--help']), /nonexistent\.sock/);
  });
});

describe('next steps after sandbox up', () => {
  const state = {
    mode: 'mvproxy',
    kubectl: '/cache/kubectl',
    apiservers: [
      { name: 'kas-a', version: 'v1.36.3', kubeconfig: { direct: '/s/kas-a.direct', sidecar: '/s/kas-a.sidecar' } },
      { name: 'kas-b', version: 'v1.37.2', kubeconfig: { direct: '/s/kas-b.direct', sidecar: '/s/kas-b.sidecar' } },
    ],
    controlPlane: { name: 'mvproxy', admin: 'http://127.0.0.1:7000' },
  } as unknown as SandboxState;

  it('suggests a kubectl command for a resource only the newer apiserver serves, through the older one’s sidecar', () => {
    assert.match(nextSteps(state, { detached: false }), /\/cache\/kubectl --kubeconfig \/s\/kas-a\.sidecar get storageversionmigrations/);
  });

  it('names the status page and how to stop', () => {
    const text = nextSteps(state, { detached: false });
    assert.match(text, /http:\/\/127\.0\.0\.1:7000\/ /);
    assert.match(text, /Ctrl-C stops the sandbox/);
    assert.match(nextSteps(state, { detached: true }), /npx mvproxy-dev sandbox down/);
  });

  it('in mode none it says the request gets a 404', () => {
    const none = {
      ...state,
      mode: 'none',
      controlPlane: undefined,
      apiservers: state.apiservers.map((a) => ({ ...a, kubeconfig: { direct: a.kubeconfig.direct } })),
    } as SandboxState;
    assert.match(nextSteps(none, { detached: false }), /kas-a\.direct get storageversionmigrations\n.*a 404/);
  });

  it('in network mode namespace it shows the published kubernetes endpoints and how to enter the namespace', () => {
    const inNamespace = { ...state, network: { mode: 'namespace', enter: 'nsenter --net=/proc/7/ns/net' } } as SandboxState;
    const text = nextSteps(inNamespace, { detached: false });
    assert.match(text, /kas-a\.sidecar -n default get endpointslices,endpoints kubernetes/);
    assert.match(text, /nsenter --net=\/proc\/7\/ns\/net sh/);
  });

  it('on loopback it says nothing of endpoints or namespaces', () => {
    assert.doesNotMatch(nextSteps(state, { detached: false }), /endpointslices|nsenter/);
  });
});
