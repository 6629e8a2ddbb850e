// Minimal HTTPS GET used by readiness probes and tests.
import { request } from 'node:https';
import { readFileSync } from 'node:fs';

export interface TlsFiles {
  ca: string;
  cert?: string;
  key?: string;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function httpsGet(url: string, tls: TlsFiles, headers: Record<string, string> = {}, timeoutMs = 5000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'GET',
        headers,
        ca: readFileSync(tls.ca),
        ...(tls.cert ? { cert: readFileSync(tls.cert) } : {}),
        ...(tls.key ? { key: readFileSync(tls.key) } : {}),
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms: GET ${url}`)));
    req.on('error', reject);
    req.end();
  });
}
