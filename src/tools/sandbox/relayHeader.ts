// The relay's one-line header (relay.ts writes it, relayAgent.ts reads it):
// `host:port\n`, the TCP address inside the namespace to connect to.

/** Longer than any `host:port` of an IPv4 or IPv6 address. */
export const RELAY_HEADER_MAX_BYTES = 64;

export interface RelayTarget {
  host: string;
  port: number;
}

export function relayHeader(target: RelayTarget): string {
  return `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}\n`;
}

/** The target of a header line (without its newline), or undefined when it names none. */
export function parseRelayHeader(line: string): RelayTarget | undefined {
  const m = /^\[?([0-9a-fA-F.:]+?)\]?:(\d{1,5})$/.exec(line);
  if (!m?.[1] || !m[2]) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1], port };
}
