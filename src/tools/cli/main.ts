#!/usr/bin/env node
// mvproxy-dev, the developer's command line around mvproxy: `install`,
// `sandbox up|down|stop|start`, `bench`, `upgrade-test`, `regenerate`. The operator's
// command is `mvproxy` (src/cli/main.ts); the sandbox runs that one.
import { runCommandLine, runMain } from '../../util/commandLine.js';
import { COMMAND_USAGE, USAGE } from './usage.js';

runMain('mvproxy-dev', () =>
  runCommandLine(
    {
      program: 'mvproxy-dev',
      usage: USAGE,
      commandUsage: COMMAND_USAGE,
      commands: {
        install: async (args) => (await import('./install.js')).runInstall(args),
        sandbox: async (args) => (await import('./sandbox.js')).runSandbox(args),
        bench: async (args) => (await import('./bench.js')).runBenchCommand(args),
        'upgrade-test': async (args) => (await import('./upgradeTest.js')).runUpgradeTestCommand(args),
        regenerate: async (args) => (await import('./regenerate.js')).runRegenerateCommand(args),
      },
    },
    process.argv.slice(2),
  ),
);
