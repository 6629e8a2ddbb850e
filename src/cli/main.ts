#!/usr/bin/env node
// mvproxy command line: `install`, `sandbox up|down|stop|start`, `serve`, `bootstrap`, `admin`, `bench`, `upgrade-test`.
// Each command's module is loaded only when it runs: `serve` must start fast
// (its sidecars wait for it), and needs none of the others.

const USAGE = `usage: mvproxy <command> [options]

commands:
  install [--kubernetes vX.Y.Z ...]     build/install Envoy, etcd, kube-apiserver and kubectl into the cache
  install --only envoy                 install only Envoy (what npm run test:unit needs)
  sandbox up [--apiserver vX.Y.Z[:RUNTIME_CONFIG] ...] [--mode mvproxy|upstream|none] [--detach] [--dir DIR] [--base-port N]
                                       start etcd and kube-apiservers (default v1.36.3 and v1.37.2)
  serve --config FILE [--log-level LEVEL]
                                       run the control plane (xDS for the sidecars, metrics and status)
  bootstrap --node NAME (--xds-socket PATH | --xds-address HOST:PORT --xds-ca F --xds-cert F --xds-key F)
            [--admin-socket PATH (default /run/mvproxy/envoy-NAME-admin.sock) | --admin-port N]
                                       print the Envoy bootstrap of one apiserver's sidecar
  admin [--socket PATH] [-o json] status | explain SIDECAR PATH | drain NAME [--wait] | undrain NAME [--wait]
                                       ask the running control plane what it sees and why; drain an apiserver
  bench [--rounds N --round-ms MS --concurrency N --in-flight 8,64 --protocol h2|http/1.1
         --convergence-samples N --convergence-cap-ms MS --out FILE]
        [--only fanout --fanout-nodes 200 --fanout-changes 6 --fanout-crds 500]
                                       measure mvproxy vs upstream's proxy vs direct (latency, throughput with h2load)
                                       and convergence, in two sandboxes side by side; then one replica's ADS
                                       fan-out to many simulated nodes and its peak memory (--only fanout: that alone)
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
      return (await import('./install.js')).runInstall(rest);
    case 'sandbox':
      return (await import('./sandbox.js')).runSandbox(rest);
    case 'serve':
      return (await import('./serve.js')).runServe(rest);
    case 'bench':
      return (await import('./bench.js')).runBenchCommand(rest);
    case 'bootstrap':
      return (await import('./bootstrap.js')).runBootstrap(rest);
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
