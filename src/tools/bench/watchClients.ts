// Many watch clients, as a large cluster's nodes hold them: each "node" is one
// connection with its own bearer token, HTTP/1.1 (one watch) or HTTP/2 (several
// watches on one connection), every watch selective (pods bound to its node,
// `fieldSelector=spec.nodeName=NODE`, as a kubelet watches). Each event's
// delay is measured from the time its write was sent (an annotation the writer
// sets), so the figure is the same for every side: direct, the minimal Envoy,
// the sidecar.
import http2 from 'node:http2';
import https from 'node:https';

/** The annotation the writer stamps on each pod: when it sent the write, epoch ms (preciseNowMs). */
export const SENT_ANNOTATION = 'bench.mvproxy.io/sent-ms';

/**
 * Epoch milliseconds to the microsecond: the writer and the watches run in
 * this one process, and the sides differ by a millisecond or two at p99, so
 * whole milliseconds (Date.now) would round a difference into a ratio.
 */
export const preciseNowMs = (): number => performance.timeOrigin + performance.now();

export interface WatchNode {
  name: string;
  token: string;
  protocol: 'http1' | 'h2';
  /** Watches this node holds (1 for HTTP/1.1). */
  watches: number;
}

export interface WatchFleetStats {
  /** Watches answered 200 and still open. */
  open: number;
  /** Events received, and their delays from the write (ms), since the last reset. */
  events: number;
  delaysMs: number[];
  /** Watches that ended or failed, with why (a few). */
  failures: string[];
  failed: number;
}

/** Watches of pods bound to `node`, from `resourceVersion` on. */
export function watchPath(namespace: string, node: string, resourceVersion: string): string {
  const selector = encodeURIComponent(`spec.nodeName=${node}`);
  return `/api/v1/namespaces/${namespace}/pods?watch=true&fieldSelector=${selector}&resourceVersion=${resourceVersion}&allowWatchBookmarks=false`;
}

/** Reads newline-delimited watch events from chunks, calling `onEvent` with each event's object annotations. */
export function eventReader(onEvent: (annotations: Record<string, string> | undefined) => void): (chunk: Buffer | string) => void {
  let buffered = '';
  return (chunk) => {
    buffered += chunk.toString();
    for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() === '') continue;
      const event = JSON.parse(line) as { object?: { metadata?: { annotations?: Record<string, string> } } };
      onEvent(event.object?.metadata?.annotations);
    }
  };
}

/** Every node's connection and watches against one base URL (a side), until close(). */
export class WatchFleet {
  readonly stats: WatchFleetStats = { open: 0, events: 0, delaysMs: [], failures: [], failed: 0 };
  private readonly closers: Array<() => void> = [];
  private closing = false;

  constructor(
    private readonly base: string,
    private readonly ca: Buffer,
    private readonly namespace: string,
  ) {}

  /** Opens `count` watches of `node` (its connection first, when new); resolves once each answered 200 (a 429 is retried as told). */
  async open(node: WatchNode, count: number, resourceVersion: string): Promise<void> {
    const path = watchPath(this.namespace, node.name, resourceVersion);
    const headers = { authorization: `Bearer ${node.token}`, accept: 'application/json' };
    if (node.protocol === 'http1') {
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: this.ca });
      this.closers.push(() => agent.destroy());
      for (let i = 0; i < count; i++) await this.openH1(agent, path, headers);
      return;
    }
    const session = this.session(node.name);
    for (let i = 0; i < count; i++) await this.openH2(session, path, headers);
  }

  /** Events from now on only. */
  resetCounts(): void {
    this.stats.events = 0;
    this.stats.delaysMs = [];
  }

  close(): void {
    this.closing = true;
    for (const close of this.closers.splice(0)) close();
  }

  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  private session(node: string): http2.ClientHttp2Session {
    const existing = this.sessions.get(node);
    if (existing) return existing;
    const session = http2.connect(this.base, { ca: this.ca });
    session.on('error', (err) => this.fail(`${node}: ${err.message}`));
    this.sessions.set(node, session);
    this.closers.push(() => session.destroy());
    return session;
  }

  private onEvent = (annotations: Record<string, string> | undefined): void => {
    const sent = Number(annotations?.[SENT_ANNOTATION]);
    this.stats.events++;
    if (Number.isFinite(sent)) this.stats.delaysMs.push(preciseNowMs() - sent);
  };

  private fail(why: string): void {
    if (this.closing) return;
    this.stats.failed++;
    if (this.stats.failures.length < 5) this.stats.failures.push(why);
  }

  private openH1(agent: https.Agent, path: string, headers: Record<string, string>): Promise<void> {
    return withRetries(
      () =>
        new Promise((resolve, reject) => {
          const req = https.request(`${this.base}${path}`, { agent, headers }, (res) => {
            if (res.statusCode !== 200) {
              res.resume();
              return reject(new WatchRefused(res.statusCode ?? 0, Number(res.headers['retry-after'] ?? 1)));
            }
            this.stats.open++;
            res.on('data', eventReader(this.onEvent));
            res.on('close', () => {
              this.stats.open--;
              this.fail(`HTTP/1.1 watch ended`);
            });
            resolve();
          });
          req.on('error', (err) => {
            this.fail(`HTTP/1.1: ${err.message}`);
            reject(err);
          });
          req.end();
        }),
    );
  }

  private openH2(session: http2.ClientHttp2Session, path: string, headers: Record<string, string>): Promise<void> {
    return withRetries(
      () =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ':path': path, ...headers });
          stream.on('response', (h) => {
            const status = Number(h[':status']);
            if (status !== 200) {
              stream.resume();
              stream.close();
              return reject(new WatchRefused(status, Number(h['retry-after'] ?? 1)));
            }
            this.stats.open++;
            stream.on('data', eventReader(this.onEvent));
            stream.on('close', () => {
              this.stats.open--;
              this.fail('HTTP/2 watch ended');
            });
            resolve();
          });
          stream.on('error', (err) => {
            this.fail(`HTTP/2: ${err.message}`);
            reject(err);
          });
          stream.end();
        }),
    );
  }
}

/** A watch answered other than 200. */
class WatchRefused extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterS: number,
  ) {
    super(`watch answered ${status}`);
  }
}

/** Retries a watch that got 429 (priority and fairness while thousands open at once), after the Retry-After it gave. */
async function withRetries(open: () => Promise<void>, attempts = 20): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await open();
    } catch (err) {
      if (!(err instanceof WatchRefused) || err.status !== 429 || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, err.retryAfterS) * 1000));
    }
  }
}
