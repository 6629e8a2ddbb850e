// Which node a gRPC peer may speak for. On a Unix socket the file mode is the
// authorization: whoever may open it is trusted with any node id (the
// sidecars of one host). On the mutual-TLS listener the client certificate is
// the credential, and a stream may only claim the node id its certificate
// names, as its Subject CN or one of its DNS SANs: otherwise any holder of a
// certificate from the xDS client CA could subscribe as another sidecar, read
// that sidecar's configuration and ACK versions it never applied (which would
// make `drain --wait` return before the real sidecar moved).
import type { PeerCertificate } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';

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

/** Why `peer` may not claim node `node`, or undefined when it may. */
export function nodeClaimRefusal(peer: PeerAuth | null, node: string): string | undefined {
  if (peer?.transportSecurityType !== 'ssl') return undefined;
  const cert = peer.sslPeerCertificate;
  if (!cert) return `node ${JSON.stringify(node)}: the connection presented no client certificate`;
  const names = certificateNodeNames(cert);
  if (names.includes(node)) return undefined;
  return `node ${JSON.stringify(node)}: the client certificate names ${names.length ? names.map((n) => JSON.stringify(n)).join(', ') : 'nothing'}, not this node`;
}
