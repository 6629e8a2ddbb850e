#!/usr/bin/env node
// mvproxy, the operator's command line: `serve`, `bootstrap`, `deploy`, `admin`.
// The developer tools (sandbox, bench, upgrade test, installer) are another
// command, `mvproxy-dev` (src/tools/cli/main.ts), that this one never loads.
import { runCommandLine, runMain } from '../util/commandLine.js';
import { COMMAND_USAGE, USAGE } from './usage.js';

runMain('mvproxy', () =>
  runCommandLine(
    {
      program: 'mvproxy',
      usage: USAGE,
      commandUsage: COMMAND_USAGE,
      ownHelp: ['admin'],
      commands: {
        serve: async (args) => (await import('./serve.js')).runServe(args),
        bootstrap: async (args) => (await import('./bootstrap.js')).runBootstrap(args),
        deploy: async (args) => (await import('./deploy.js')).runDeploy(args),
        admin: async (args) => (await import('./admin.js')).runAdmin(args),
      },
    },
    process.argv.slice(2),
  ),
);
