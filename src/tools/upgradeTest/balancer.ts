// The simulated load balancer every mode sits behind: each request goes to an
// entry point in rotation (mvproxy: a sidecar; upstream and none: an
// apiserver itself). The operator takes an entry out of rotation before a
// restart (it cuts the watches open on it, their clients resume elsewhere,
// and waits for its other requests in flight to finish) and puts it back
// after; from then on the health check decides (healthCheck.ts): the entry
// takes traffic again after `rise` passing checks of /readyz, `inter` apart,
// as HAProxy in front of a kubeadm control plane does. The health check also
// takes an entry in rotation out after `fall` failing checks.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterCheck, DOWN, UP, type Health, type HealthCheckRule } from './healthCheck.js';
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

/** How a watch stream ended. */
export interface WatchEnd {
  /** The status of the answer; 0 when none came (transport failure before the headers). */
  status: number;
  /** The load balancer cut it (the operator took its entry out, or the run ended). */
  cut: boolean;
  /** Transport failure text: before the headers, or after them (the stream broke). */
  error?: string;
  /** The first bytes of a non-200 answer. */
  body?: string;
}

export const CUT = 'cut by the load balancer';

export interface BalancerOptions {
  healthCheck: HealthCheckRule;
  /** Milliseconds since the mode's start. */
  now: () => number;
  /** Called whenever an entry enters or leaves the rotation, with the reason. */
  onRotation: (name: string, inRotation: boolean, t: number, reason: string) => void;
}

const REQUEST_TIMEOUT_MS = 30_000;

export class Balancer {
  private readonly entries = new Map<string, Entry>();
  private readonly rotation = new Set<string>();
  /** Entries the operator has taken out (HAProxy's maintenance state): not checked, never in rotation. */
  private readonly maintenance = new Set<string>();
  private readonly health = new Map<string, Health>();
  private readonly waitingUp = new Map<string, Array<(t: number) => void>>();
  private checking = true;
  private readonly inflight = new Map<string, number>();
  private readonly watches = new Map<string, Set<AbortController>>();
  private readonly agents = new Map<string, Agent>();
  private readonly ca: Buffer;
  private readonly cert: Buffer;
  private readonly key: Buffer;

  /** Every entry starts in rotation and up: the sandbox has waited for each to be ready. */
  constructor(
    entries: Entry[],
    private readonly creds: Credentials,
    private readonly opts: BalancerOptions,
  ) {
    for (const e of entries) {
      this.entries.set(e.name, e);
      this.rotation.add(e.name);
      this.health.set(e.name, UP);
    }
    this.ca = readFileSync(creds.ca);
    this.cert = readFileSync(creds.cert.cert);
    this.key = readFileSync(creds.cert.key);
    for (const e of entries) void this.checkLoop(e);
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
    this.maintenance.add(name);
    this.setRotation(name, false, 'taken out by the operator');
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

  /** Ends the operator's hold on `name`: it is down until `rise` checks in a row pass. Resolves with the moment it re-entered the rotation. */
  putBack(name: string): Promise<number> {
    this.health.set(name, DOWN);
    this.maintenance.delete(name);
    return new Promise<number>((resolve) => this.waitingUp.set(name, [...(this.waitingUp.get(name) ?? []), resolve]));
  }

  /** Stops the health checks, cuts every watch and closes every connection. */
  close(): void {
    this.checking = false;
    for (const set of this.watches.values()) for (const w of set) w.abort();
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private setRotation(name: string, inRotation: boolean, reason: string): void {
    if (this.rotation.has(name) === inRotation) return;
    if (inRotation) this.rotation.add(name);
    else this.rotation.delete(name);
    const t = this.opts.now();
    this.opts.onRotation(name, inRotation, t, reason);
    if (inRotation) {
      for (const resolve of this.waitingUp.get(name) ?? []) resolve(t);
      this.waitingUp.delete(name);
    }
  }

  /** Checks `entry` every `inter` while it is not in maintenance; the rule moves it in and out of the rotation. */
  private async checkLoop(entry: Entry): Promise<void> {
    const rule = this.opts.healthCheck;
    while (this.checking) {
      const started = Date.now();
      if (!this.maintenance.has(entry.name)) {
        const passed = await this.check(entry);
        // The operator may have taken it out while the check ran: its result no longer counts.
        if (this.checking && !this.maintenance.has(entry.name)) {
          const after = afterCheck(this.health.get(entry.name) ?? DOWN, passed, rule);
          this.health.set(entry.name, after);
          if (after.up !== this.rotation.has(entry.name)) {
            this.setRotation(entry.name, after.up, after.up ? `${rule.rise} passing checks of ${rule.path}` : `${rule.fall} failing checks of ${rule.path}`);
          }
        }
      }
      await sleep(Math.max(0, rule.intervalMs - (Date.now() - started)));
    }
  }

  /** One health check: a fresh connection, GET of the check path, passed on a 200 within the timeout. */
  private check(entry: Entry): Promise<boolean> {
    const rule = this.opts.healthCheck;
    return new Promise<boolean>((resolve) => {
      const req = request(entry.url + rule.path, {
        method: 'GET',
        agent: false,
        ca: this.ca,
        headers: { authorization: `Bearer ${this.creds.token}` },
        timeout: rule.timeoutMs,
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
        res.on('error', () => resolve(false));
      });
      req.on('timeout', () => req.destroy(new Error('health check timeout')));
      req.on('error', () => resolve(false));
      req.end();
    });
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
   * the server, broken after its headers, or failed before them.
   */
  watch(
    entry: Entry,
    kind: ClientKind,
    path: string,
    onHeaders: (status: number, retryAfter: boolean) => void,
    onLine: (line: string) => void,
  ): Promise<WatchEnd> {
    const abort = new AbortController();
    const set = this.watches.get(entry.name) ?? new Set();
    set.add(abort);
    this.watches.set(entry.name, set);
    return new Promise<WatchEnd>((resolve) => {
      let status = 0;
      let settled = false;
      const settle = (end: Omit<WatchEnd, 'status' | 'cut'>): void => {
        if (settled) return;
        settled = true;
        resolve(abort.signal.aborted ? { status, cut: true, error: CUT } : { status, cut: false, ...end });
      };
      const req = request(entry.url + path, {
        method: 'GET',
        agent: false,
        ca: this.ca,
        ...(kind === 'cert' ? { cert: this.cert, key: this.key } : {}),
        headers: this.headers(kind, {}),
        signal: abort.signal,
      });
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        onHeaders(status, res.headers['retry-after'] !== undefined);
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
        res.on('end', () => settle(status === 200 ? {} : { body: buffered.slice(0, 300) }));
        res.on('error', (err) => settle({ error: err.message }));
        // A stream that closes without its last chunk broke (reset, or the server went away mid-stream).
        res.on('close', () => settle(res.complete ? {} : { error: 'stream closed before its end' }));
      });
      req.on('error', (err) => settle({ error: err.message }));
      req.end();
    }).finally(() => set.delete(abort));
  }
}
