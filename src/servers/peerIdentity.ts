// Which sidecar's config an xDS node runs, and which node a gRPC peer may
// speak for.
//
// A node (one Envoy) runs the config of the sidecar of one apiserver: the one
// its node.metadata `apiserver` names, else the one its node id names (the
// bootstrap's default, one Envoy per apiserver). Several Envoys may run one
// sidecar's config; they share its snapshot, computed once (as
// go-control-plane's node hash groups nodes).
//
// On a Unix socket the file mode is the authorization: whoever may open it is
// trusted with any node id (the sidecars of one host). On the mutual-TLS
// listener the client certificate is the credential, and a stream may only
// claim a node id, and a sidecar, its certificate names, as its Subject CN or
// one of its DNS SANs: otherwise any holder of a certificate from the xDS
// client CA could subscribe as another sidecar, read that sidecar's
// configuration and ACK versions it never applied (which would make
// `drain --wait` return before the real sidecar moved).
import type { PeerCertificate } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import type { Struct__Output } from '../generated/google/protobuf/Struct.js';
import { NODE_APISERVER_KEY } from '../xds/bootstrap.js';

/** The sidecar (apiserver name) whose config a node runs: node.metadata.apiserver when it is a non-empty string, else the node id. */
export function nodeSidecar(id: string, metadata: Struct__Output | null | undefined): string {
  const named = metadata?.fields?.[NODE_APISERVER_KEY];
  return named?.kind === 'stringValue' && named.stringValue ? named.stringValue : id;
}

/** What grpc-js knows of a call's transport (its AuthContext type is not exported). */
export type PeerAuth = ReturnType<grpc.ServerDuplexStream<unknown, unknown>['getAuthContext']>;

/** The names a client certificate vouches for: its Subject CN(s) and DNS SANs. */
export function certificateNodeNames(cert: PeerCertificate): string[] {
  const cn = cert.subject?.CN;
  const names = Array.isArray(cn) ? [...cn] : cn ? [cn] : [];
  // Node prints SANs as `DNS:a, DNS:b, IP Address:...`; a name it had to quote
  // (commas, quotes) is not a DNS name a node id could be.
  for (const entry of (cert.subjectaltname ?? '').split(', ')) {
    if (entry.startsWith('DNS:') && !entry.includes('"')) names.push(entry.slice('DNS:'.length));
  }
  return names;
}

/** Why `peer` may not claim node `node` running `sidecar`'s config (by default its own), or undefined when it may. */
export function nodeClaimRefusal(peer: PeerAuth | null, node: string, sidecar = node): string | undefined {
  if (peer?.transportSecurityType !== 'ssl') return undefined;
  const cert = peer.sslPeerCertificate;
  if (!cert) return `node ${JSON.stringify(node)}: the connection presented no client certificate`;
  const names = certificateNodeNames(cert);
  const named = (): string => (names.length ? names.map((n) => JSON.stringify(n)).join(', ') : 'nothing');
  if (!names.includes(node)) return `node ${JSON.stringify(node)}: the client certificate names ${named()}, not this node`;
  if (!names.includes(sidecar))
    return `node ${JSON.stringify(node)} asks for the sidecar of ${JSON.stringify(sidecar)}: the client certificate names ${named()}, not that apiserver`;
  return undefined;
}
