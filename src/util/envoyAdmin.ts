// GET on a sidecar's Envoy admin interface, which listens on a Unix socket
// (fetch cannot dial one). Throws unless the answer is 200.
import { request } from 'node:http';

export function envoyAdminGet(socketPath: string, path: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(body);
        else reject(new Error(`Envoy admin ${path}: ${res.statusCode} ${body.slice(0, 200)}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`Envoy admin ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
