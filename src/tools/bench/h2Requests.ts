// HTTP/2 GETs on sessions opened (and warmed) ahead of the timing, for
// measurements that time single requests or one burst at a precise moment
// (changedDocument.ts): no TLS handshake falls inside a timed request, and
// the shape is h2load's (a few connections, many streams each), as client-go
// speaks.
import { type ClientHttp2Session, connect } from 'node:http2';

export interface TimedAnswer {
  status: number;
  ms: number;
  body: Buffer;
}

/** Sessions to one server, opened and warmed with one GET of `warmPath` each. */
export interface H2Sessions {
  get(path: string, headers: Record<string, string>, session?: number): Promise<TimedAnswer>;
  /** `count` GETs at once, spread over the sessions; resolves with every answer and the time from the first sent to the last ended. */
  burst(path: string, headers: Record<string, string>, count: number): Promise<{ answers: TimedAnswer[]; ms: number }>;
  close(): void;
}

const TIMEOUT_MS = 30_000;

/** One GET; a reset stream, a timeout or a session error is an answer with status 0, never a rejection. */
function get(session: ClientHttp2Session, path: string, headers: Record<string, string>): Promise<TimedAnswer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let status = 0;
    let ended = false;
    const chunks: Buffer[] = [];
    const done = (): void => resolve({ status: ended ? status : 0, ms: performance.now() - t0, body: Buffer.concat(chunks) });
    try {
      const stream = session.request({ ':method': 'GET', ':path': path, ...headers });
      stream.setTimeout(TIMEOUT_MS, () => stream.close());
      stream.on('response', (h) => {
        status = Number(h[':status'] ?? 0);
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        ended = true;
      });
      stream.on('error', () => {});
      stream.on('close', done);
      stream.end();
    } catch {
      done();
    }
  });
}

export async function openH2Sessions(url: string, ca: Buffer, count: number, warm: { path: string; headers: Record<string, string> }): Promise<H2Sessions> {
  const sessions = Array.from({ length: count }, () => connect(url, { ca }));
  for (const s of sessions) s.on('error', () => {}); // a failed stream rejects its own request
  const close = (): void => {
    for (const s of sessions) s.close();
  };
  try {
    await Promise.all(
      sessions.map(async (s) => {
        const answer = await get(s, warm.path, warm.headers);
        if (answer.status !== 200) throw new Error(`${url}${warm.path}: ${answer.status} ${answer.body.toString('utf8').slice(0, 200)}`);
      }),
    );
  } catch (err) {
    close();
    throw err;
  }
  const at = (i: number): ClientHttp2Session => {
    const s = sessions[i % sessions.length];
    if (!s) throw new Error('internal: no session');
    return s;
  };
  return {
    get: (path, headers, session = 0) => get(at(session), path, headers),
    burst: async (path, headers, n) => {
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => get(at(i), path, headers)));
      return { answers, ms: performance.now() - t0 };
    },
    close,
  };
}
