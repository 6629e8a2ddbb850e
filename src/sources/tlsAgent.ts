// One keep-alive HTTPS agent per TLS material (CA, client certificate and
// key, server name), rebuilt only when the material changes: credentials are
// re-read from the kubeconfig per request, so rotated certificates are picked
// up, but equal material reuses the agent, its open connections and one TLS
// context. An agent given ca/cert/key itself would build a new context
// (parsing the key and the CA) for every connection it opens.
import https from 'node:https';
import tls from 'node:tls';

export interface TlsMaterial {
  ca?: https.RequestOptions['ca'];
  cert?: https.RequestOptions['cert'];
  key?: https.RequestOptions['key'];
  servername?: string;
  rejectUnauthorized?: boolean;
}

export interface TlsAgentKeeper {
  /** The agent for this material: the last one when the material is the same. */
  agentFor(material: TlsMaterial): https.Agent;
  /** Closes the agent's connections; the next agentFor builds a new one. */
  destroy(): void;
}

/** `sockets`: connections per agent (default: no limit); `idleSockets`: kept open while idle (callers that send n requests at once keep n). */
export function tlsAgentKeeper({ sockets, idleSockets }: { sockets?: number; idleSockets: number }): TlsAgentKeeper {
  let agent: https.Agent | undefined;
  let agentTls: TlsMaterial | undefined;
  return {
    agentFor(material) {
      if (agent && agentTls && sameTls(agentTls, material)) return agent;
      agent?.destroy();
      agentTls = material;
      const { ca, cert, key, ...connection } = material;
      const secureContext = tls.createSecureContext({
        ...(ca !== undefined ? { ca } : {}),
        ...(cert !== undefined ? { cert } : {}),
        ...(key !== undefined ? { key } : {}),
      });
      agent = new https.Agent({
        ...connection,
        secureContext,
        keepAlive: true,
        maxFreeSockets: idleSockets,
        ...(sockets === undefined ? {} : { maxSockets: sockets }),
      });
      return agent;
    },
    destroy() {
      agent?.destroy();
      agent = undefined;
      agentTls = undefined;
    },
  };
}

/** The TLS material of options the client library filled in (applyToHTTPSOptions). */
export function tlsMaterialOf(opts: https.RequestOptions, servername?: string): TlsMaterial {
  const material: TlsMaterial = {};
  if (opts.ca !== undefined) material.ca = opts.ca;
  if (opts.cert !== undefined) material.cert = opts.cert;
  if (opts.key !== undefined) material.key = opts.key;
  if (opts.rejectUnauthorized !== undefined) material.rejectUnauthorized = opts.rejectUnauthorized;
  const name = servername ?? opts.servername;
  if (name !== undefined) material.servername = name;
  return material;
}

function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return (
    sameBytes(a.ca, b.ca) &&
    sameBytes(a.cert, b.cert) &&
    sameBytes(a.key, b.key) &&
    a.servername === b.servername &&
    a.rejectUnauthorized === b.rejectUnauthorized
  );
}

function sameBytes(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameBytes(x, b[i]));
  return a === b;
}
