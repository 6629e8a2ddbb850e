#!/usr/bin/env node
// mvproxy command line: `install`, `sandbox up|down|stop|start`, `serve`, `bootstrap`, `deploy`, `admin`, `bench`, `upgrade-test`.
// Each command's module is loaded only when it runs: `serve` must start fast
// (its sidecars wait for it), and needs none of the others.
import { asksForHelp, COMMAND_USAGE, USAGE } from './usage.js';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `mvproxy CMD --help` and `mvproxy help CMD`; admin has help per verb (admin.ts).
  const helpFor = command === 'help' ? rest[0] : command !== 'admin' && asksForHelp(rest) ? command : undefined;
  if (helpFor !== undefined && helpFor !== 'admin') {
    const text = COMMAND_USAGE[helpFor];
    if (text === undefined) {
      process.stderr.write(`mvproxy: unknown command ${JSON.stringify(helpFor)}\n\n${USAGE}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  if (command === 'help' && rest[0] === 'admin') return (await import('./admin.js')).runAdmin(['--help', ...rest.slice(1)]);
  switch (command) {
    case 'install':
      return (await import('./install.js')).runInstall(rest);
    case 'sandbox':
      return (await import('./sandbox.js')).runSandbox(rest);
    case 'serve':
      return (await import('./serve.js')).runServe(rest);
    case 'bench':
      return (await import('./bench.js')).runBenchCommand(rest);
    case 'bootstrap':
      return (await import('./bootstrap.js')).runBootstrap(rest);
    case 'deploy':
      return (await import('./deploy.js')).runDeploy(rest);
    case 'admin':
      return (await import('./admin.js')).runAdmin(rest);
    case 'upgrade-test':
      return (await import('./upgradeTest.js')).runUpgradeTestCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`mvproxy: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`mvproxy: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
