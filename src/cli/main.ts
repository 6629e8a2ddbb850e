#!/usr/bin/env node
// mvproxy command line: `install`, `sandbox up|down|stop|start`, `serve`, `bootstrap`, `admin`, `bench`, `upgrade-test`.
import { runInstall } from './install.js';
import { runSandbox } from './sandbox.js';
import { runServe } from './serve.js';
import { runBenchCommand } from './bench.js';
import { runBootstrap } from './bootstrap.js';
import { runAdmin } from './admin.js';
import { runUpgradeTestCommand } from './upgradeTest.js';

const USAGE = `usage: mvproxy <command> [options]

commands:
  install [--kubernetes vX.Y.Z ...]     build/install Envoy, etcd, kube-apiserver and kubectl into the cache
  install --only envoy                 install only Envoy (what npm run test:unit needs)
  sandbox up [--apiserver vX.Y.Z[:RUNTIME_CONFIG] ...] [--mode mvproxy|upstream|none] [--detach] [--dir DIR] [--base-port N]
                                       start etcd and kube-apiservers (default v1.36.3 and v1.37.2)
  serve --config FILE [--log-level LEVEL]
                                       run the control plane (xDS for the sidecars, metrics and status)
  bootstrap --node NAME (--xds-socket PATH | --xds-address HOST:PORT --xds-ca F --xds-cert F --xds-key F) [--admin-port N]
                                       print the Envoy bootstrap of one apiserver's sidecar
  admin [--socket PATH] [-o json] status | explain SIDECAR PATH | drain NAME [--wait] | undrain NAME [--wait]
                                       ask the running control plane what it sees and why; drain an apiserver
  bench [--rounds N --round-ms MS --concurrency N --convergence-samples N]
                                       measure sidecar vs direct latency/throughput and routing convergence
  upgrade-test --out FILE [--mode none|upstream|mvproxy|all] [--svg FILE] [--short]
                                       upgrade three apiservers and roll them back under load, per mode;
                                       count spurious 404s, lost writes, missed watch events, 5xx, incomplete discovery
  sandbox down [--dir DIR]             stop a detached sandbox
  sandbox stop NAME [--dir DIR]        stop one apiserver of a running sandbox
  sandbox start NAME [--version vX.Y.Z] [--runtime-config CFG] [--dir DIR]
                                       start it again (same identity), at another version if asked
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'install':
      return runInstall(rest);
    case 'sandbox':
      return runSandbox(rest);
    case 'serve':
      return runServe(rest);
    case 'bench':
      return runBenchCommand(rest);
    case 'bootstrap':
      return runBootstrap(rest);
    case 'admin':
      return runAdmin(rest);
    case 'upgrade-test':
      return runUpgradeTestCommand(rest);
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
