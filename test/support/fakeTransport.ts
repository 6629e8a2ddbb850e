// An HttpTransport that answers from the test instead of an apiserver, and a
// responder that behaves like one (ETags, If-None-Match).
import type { HttpResponse, HttpTransport } from '../../src/sources/apiserverHttp.js';
import { OPENAPI_INDEX } from './discoveryBodies.js';

export type Responder = (path: string, headers: Record<string, string>) => HttpResponse | Error;

/** Discovery calls go to `respond` (and are recorded); `/openapi/v3`, `/readyz` and `/version` have their own responders. */
export class FakeTransport implements HttpTransport {
  readonly calls: Array<{ path: string; headers: Record<string, string> }> = [];
  readonly responses: Array<{ path: string; etag: string | undefined }> = [];
  openApiCalls = 0;
  respondOpenApi: () => HttpResponse | Error = () => ({ status: 200, body: JSON.stringify(OPENAPI_INDEX) });
  respondReadyz: () => HttpResponse | Error = () => ({ status: 200, body: 'ok' });
  versionCalls = 0;
  respondVersion: () => HttpResponse | Error = () => ({ status: 200, body: JSON.stringify({ major: '1', minor: '37', gitVersion: 'v1.37.2' }) });
  closed = false;
  constructor(public respond: Responder) {}
  async get(path: string, headers: Record<string, string>): Promise<HttpResponse> {
    if (path === '/readyz') {
      const answer = this.respondReadyz();
      if (answer instanceof Error) throw answer;
      return answer;
    }
    if (path === '/version') {
      this.versionCalls++;
      const answer = this.respondVersion();
      if (answer instanceof Error) throw answer;
      return answer;
    }
    if (path === '/openapi/v3') {
      this.openApiCalls++;
      const answer = this.respondOpenApi();
      if (answer instanceof Error) throw answer;
      return answer;
    }
    this.calls.push({ path, headers: { ...headers } });
    const answer = this.respond(path, headers);
    if (answer instanceof Error) throw answer;
    this.responses.push({ path, etag: answer.etag });
    return answer;
  }
  close(): void {
    this.closed = true;
  }
}

/** Serves /api and /apis with ETags and honours If-None-Match, like an apiserver. */
export function apiserverResponder(docs: { core: string; apis: string }): Responder {
  return (p, headers) => {
    const body = p === '/api' ? docs.core : docs.apis;
    const etag = `"${p}-${body.length}-${body.includes('apps') ? 'apps' : 'x'}"`;
    if (headers['If-None-Match'] === etag) return { status: 304, body: '' };
    return { status: 200, etag, body };
  };
}
