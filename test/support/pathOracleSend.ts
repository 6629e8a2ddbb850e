// Sending one of the path oracle's cases as is, the path not normalized on
// the way, and what answered it.
import type { Agent } from 'node:https';
import { request } from 'node:https';
import type { OracleCase } from './pathOracleCases.js';

/** A watch or a followed log streams: what arrives within this long after the headers is enough. */
const STREAM_READ_MS = 1200;
const REQUEST_TIMEOUT_MS = 20_000;

export interface Answer {
  status: number;
  /** A transport error or Node refusing to send the path. */
  error?: string;
}

/** Sends one case as is (the path is not normalized on the way), reads its status, and stops reading a stream after a moment. */
export function send(base: URL, agent: Agent, c: OracleCase, userAgent: string, body?: string): Promise<Answer & { body: string }> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Answer & { body: string }): void => {
      if (!settled) {
        settled = true;
        resolve(answer);
      }
    };
    let req: ReturnType<typeof request>;
    try {
      const headers: Record<string, string> = { 'user-agent': userAgent, accept: 'application/json', ...c.headers };
      if (body !== undefined) headers['content-type'] = c.method === 'PATCH' ? 'application/json-patch+json' : 'application/json';
      req = request({ host: base.hostname, port: base.port, method: c.method ?? 'GET', path: c.path, agent, headers });
    } catch (err) {
      done({ status: 0, error: (err as Error).message, body: '' });
      return;
    }
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      const finish = (): void => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      const timer = setTimeout(() => {
        finish();
        res.destroy();
      }, STREAM_READ_MS);
      res.on('data', (chunk: Buffer) => {
        if (chunks.length < 64) chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        finish();
      });
      res.on('error', () => {
        clearTimeout(timer);
        finish();
      });
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      done({ status: res.statusCode ?? 101, body: '' });
    });
    req.on('error', (err) => done({ status: 0, error: err.message, body: '' }));
    req.end(body);
  });
}

/** The answer without its body, as a case's result keeps it. */
export function strip(answer: Answer & { body: string }): Answer {
  return answer.error ? { status: answer.status, error: answer.error } : { status: answer.status };
}
