// Minimal HTTPS client used by readiness probes, tests and benchmarks.
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
  /** The body as it came, undecoded (gzip and protobuf are not text). */
  bodyBytes: Buffer;
}

export interface HttpsRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
}

export function httpsRequest(url: string, tls: TlsFiles, req: HttpsRequest = {}): Promise<HttpResult> {
  const timeoutMs = req.timeoutMs ?? 5000;
  return new Promise((resolve, reject) => {
    const r = request(
      url,
      {
        method: req.method ?? 'GET',
        headers: req.headers ?? {},
        ca: readFileSync(tls.ca),
        ...(tls.cert ? { cert: readFileSync(tls.cert) } : {}),
        ...(tls.key ? { key: readFileSync(tls.key) } : {}),
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bodyBytes = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: bodyBytes.toString('utf8'), bodyBytes });
        });
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`timeout after ${timeoutMs} ms: ${req.method ?? 'GET'} ${url}`)));
    r.on('error', reject);
    r.end(req.body);
  });
}

export function httpsGet(url: string, tls: TlsFiles, headers: Record<string, string> = {}, timeoutMs = 5000): Promise<HttpResult> {
  return httpsRequest(url, tls, { headers, timeoutMs });
}
