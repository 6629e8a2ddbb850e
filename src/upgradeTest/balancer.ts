// The simulated load balancer every mode sits behind: each request goes to an
// entry point in rotation (mvproxy: a sidecar; upstream and none: an
// apiserver itself). The operator takes an entry out of rotation, cuts the
// watches open on it (their clients resume elsewhere) and waits for its
// other requests in flight to finish before stopping what is behind it.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientKind } from './observations.js';

export interface Entry {
  name: string;
  url: string;
}

export interface Credentials {
  ca: string;
  token: string;
  cert: { cert: string; key: string };
}

export interface Answer {
  status: number;
  retryAfter: boolean;
  body: string;
  /** Transport failure text when status is 0. */
  error?: string;
}

const REQUEST_TIMEOUT_MS = 30_000;

export class Balancer {
  private readonly entries = new Map<string, Entry>();
  private readonly rotation = new Set<string>();
  private readonly inflight = new Map<string, number>();
  private readonly watches = new Map<string, Set<AbortController>>();
  private readonly agents = new Map<string, Agent>();
  private readonly ca: Buffer;
  private readonly cert: Buffer;
  private readonly key: Buffer;

  constructor(
    entries: Entry[],
    private readonly creds: Credentials,
  ) {
    for (const e of entries) {
      this.entries.set(e.name, e);
      this.rotation.add(e.name);
    }
    this.ca = readFileSync(creds.ca);
    this.cert = readFileSync(creds.cert.cert);
    this.key = readFileSync(creds.cert.key);
  }

  /** A random entry in rotation. */
  pick(avoid?: string): Entry {
    const names = [...this.rotation];
    const preferred = names.filter((n) => n !== avoid);
    const pool = preferred.length > 0 ? preferred : names;
    const name = pool[Math.floor(Math.random() * pool.length)];
    const entry = name === undefined ? undefined : this.entries.get(name);
    if (!entry) throw new Error('no entry point in rotation');
    return entry;
  }

  /** Takes `name` out of rotation, cuts its watches, and waits (at most `timeoutMs`) until its requests in flight have finished. */
  async takeOut(name: string, timeoutMs = 30_000): Promise<void> {
    this.rotation.delete(name);
    for (const w of this.watches.get(name) ?? []) w.abort();
    const deadline = Date.now() + timeoutMs;
    while ((this.inflight.get(name) ?? 0) > 0 && Date.now() < deadline) await sleep(50);
    // Idle keep-alive connections to it would be reset when it stops.
    for (const [k, agent] of this.agents) {
      if (k.startsWith(`${name}|`)) {
        agent.destroy();
        this.agents.delete(k);
      }
    }
  }

  putBack(name: string): void {
    this.rotation.add(name);
  }

  close(): void {
    for (const set of this.watches.values()) for (const w of set) w.abort();
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private agent(entry: string, kind: ClientKind): Agent {
    const k = `${entry}|${kind}`;
    let agent = this.agents.get(k);
    if (!agent) {
      agent = new Agent({ keepAlive: true, maxSockets: 16, ca: this.ca, ...(kind === 'cert' ? { cert: this.cert, key: this.key } : {}) });
      this.agents.set(k, agent);
    }
    return agent;
  }

  private headers(kind: ClientKind, extra: Record<string, string>): Record<string, string> {
    return { accept: 'application/json', ...(kind === 'token' ? { authorization: `Bearer ${this.creds.token}` } : {}), ...extra };
  }

  /** One ordinary request through `entry`, counted in flight until its answer has been read. */
  async send(entry: Entry, kind: ClientKind, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    this.inflight.set(entry.name, (this.inflight.get(entry.name) ?? 0) + 1);
    try {
      return await new Promise<Answer>((resolve) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          entry.url + path,
          {
            method,
            agent: this.agent(entry.name, kind),
            headers: this.headers(kind, { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers }),
            timeout: REQUEST_TIMEOUT_MS,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] !== undefined, body: Buffer.concat(chunks).toString('utf8') }),
            );
            res.on('error', (err) => resolve({ status: 0, retryAfter: false, body: '', error: err.message }));
          },
        );
        req.on('timeout', () => req.destroy(new Error(`timeout after ${REQUEST_TIMEOUT_MS} ms`)));
        req.on('error', (err) => resolve({ status: 0, retryAfter: false, body: '', error: err.message }));
        req.end(payload);
      });
    } finally {
      this.inflight.set(entry.name, (this.inflight.get(entry.name) ?? 1) - 1);
    }
  }

  /**
   * Opens a watch through `entry`; `onHeaders` gets the status, `onLine` each
   * event line. Resolves when the stream ends: cut by the balancer, closed by
   * the server, or failed (`error`).
   */
  watch(
    entry: Entry,
    kind: ClientKind,
    path: string,
    onHeaders: (status: number, retryAfter: boolean) => void,
    onLine: (line: string) => void,
  ): Promise<{ error?: string; body?: string }> {
    const abort = new AbortController();
    const set = this.watches.get(entry.name) ?? new Set();
    set.add(abort);
    this.watches.set(entry.name, set);
    return new Promise<{ error?: string; body?: string }>((resolve) => {
      const req = request(entry.url + path, {
        method: 'GET',
        agent: false,
        ca: this.ca,
        ...(kind === 'cert' ? { cert: this.cert, key: this.key } : {}),
        headers: this.headers(kind, {}),
        signal: abort.signal,
      });
      req.on('response', (res) => {
        onHeaders(res.statusCode ?? 0, res.headers['retry-after'] !== undefined);
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
            const line = buffered.slice(0, i).trim();
            buffered = buffered.slice(i + 1);
            if (line) onLine(line);
          }
        });
        res.on('end', () => resolve(res.statusCode === 200 ? {} : { body: buffered.slice(0, 300) }));
        res.on('error', (err) => resolve({ error: err.message }));
        res.on('close', () => resolve({}));
      });
      req.on('error', (err) => resolve({ error: abort.signal.aborted ? 'cut by the load balancer' : err.message }));
      req.end();
    }).finally(() => set.delete(abort));
  }
}
