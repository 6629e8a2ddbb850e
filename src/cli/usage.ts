// Every command's and admin verb's help text, in one small module: `--help`
// (or -h) works on each of them without loading the command itself.

export const USAGE = `usage: mvproxy <command> [options]      (mvproxy <command> --help for one command)

commands:
  serve        run the control plane (xDS for the sidecars, metrics, status, admin API)
  bootstrap    print the Envoy bootstrap of one apiserver's sidecar
  deploy       write the static pods and files of each kubeadm control-plane node
  admin        ask the running control plane what it sees and why; drain an apiserver; what it pushed

The local sandbox, the bench, the upgrade test and the installer are mvproxy-dev's commands.
`;

export const COMMAND_USAGE: Readonly<Record<string, string>> = {
  serve: `usage: mvproxy serve --config FILE [--log-level LEVEL]

Runs one control-plane replica: it watches the apiservers, plans every
sidecar's routes and pushes them over xDS (ADS), answers merged discovery over
ext_proc, and serves metrics, status and the admin API. The configuration
file's fields are described in docs/operating.md ("Configuration").

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
from the admin interface and nothing else, for Prometheus (see docs/observability.md).
--apiserver NAME makes --node the id of this Envoy alone and runs the config of
apiserver NAME's sidecar (node.metadata apiserver): several Envoys may run one
sidecar's config, computed once for all of them; over mutual TLS the client
certificate must name both.
`,
  deploy: `usage: mvproxy deploy kubeadm --node NAME=IP[,HOSTNAME] ... --out DIR [--image IMAGE] [--envoy-image IMAGE] [--envoy-concurrency N] [--no-publish-kubernetes-service] [--service-cidr CIDR]

Writes, for each kubeadm control-plane node (give every one, with its kubeadm
node name and advertise address), its files under DIR/NAME/ at their paths on
the node: the static pods of its control-plane replica and Envoy sidecar, the
replica's config, the sidecar's bootstrap and the kubeadm patch that moves the
apiserver to 6444 (docs/kubeadm.md). --image defaults to mvproxy:<version>,
built by the operator (deploy/Dockerfile); --envoy-image to
docker.io/envoyproxy/envoy:v1.40.0. --envoy-concurrency: the sidecar's Envoy
worker threads (default 2; each holds its own copy of the pushed documents,
docs/operating.md). By default every replica publishes the \`kubernetes\`
Service's endpoints (its sidecars; --service-cidr, default kubeadm's
10.96.0.0/12, gives the ClusterIP its probes verify),
kube-apiserver1+json.json turns the apiservers' own endpoint reconciler off,
and DIR/kubernetes-mvproxy-slices.yaml holds the slices the operator creates.
--no-publish-kubernetes-service renders the adoption step, before that switch
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
