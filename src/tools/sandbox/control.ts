// The sandbox's control endpoint: a small HTTP API on a Unix socket in the
// sandbox folder (owner-only), so `mvproxy-dev sandbox stop|start NAME` can act on
// a sandbox running in another process.
import { createServer, request, type Server } from 'node:http';
import { rmSync, chmodSync } from 'node:fs';
import type { Sandbox } from './sandbox.js';

export interface StartRequest {
  version?: string;
  runtimeConfig?: string;
}

export function serveControl(sandbox: Sandbox, socketPath: string, onDown: () => void): Promise<Server> {
  rmSync(socketPath, { force: true });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const match = /^\/apiservers\/([a-z0-9-]+)\/(stop|start)$/.exec(req.url ?? '');
      const reply = (status: number, message: string): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ message })}\n`);
      };
      if (req.method === 'POST' && req.url === '/down') {
        reply(200, 'stopping');
        onDown();
        return;
      }
      if (req.method !== 'POST' || !match) return reply(404, `unknown request ${req.method} ${req.url}`);
      const [, name, verb] = match as unknown as [string, string, 'stop' | 'start'];
      let body: StartRequest = {};
      try {
        body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as StartRequest) : {};
      } catch {
        return reply(400, 'request body is not JSON');
      }
      const action = verb === 'stop' ? sandbox.stopApiserver(name) : sandbox.startApiserver(name, body);
      action.then(
        () => reply(200, `${verb} ${name}: done`),
        (err: unknown) => reply(409, (err as Error).message),
      );
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      chmodSync(socketPath, 0o600);
      resolve(server);
    });
  });
}

/** Client side: POST to the control socket, throw the server's message on failure. */
export function callControl(socketPath: string, path: string, body: unknown = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let message = text;
        try {
          message = (JSON.parse(text) as { message: string }).message;
        } catch {
          // keep raw text
        }
        if ((res.statusCode ?? 500) >= 300) reject(new Error(message));
        else resolve(message);
      });
    });
    req.on('error', (err) => reject(new Error(`cannot reach the sandbox at ${socketPath}: ${err.message} (is it up?)`)));
    req.end(payload);
  });
}
