// Never worse than no proxy (docs/never-worse.md), on the real sandbox
// (kube-apiserver v1.36.3 and v1.37.2, Envoy sidecars, the control plane):
// - the identity an apiserver sees through a sidecar is the one it derives
//   itself from the same client certificate (SelfSubjectReview, RBAC);
// - with the control plane paused, then killed, then restarted, mixed traffic
//   through both sidecars fails no request and loses no watch event, and
//   merged discovery stays merged throughout: each sidecar keeps serving the
//   last documents the control plane pushed to it (ECDS configurations Envoy
//   keeps), so the peer-only group never disappears from kas-a's /apis, nor
//   its resource from `kubectl api-resources` through kas-a's sidecar;
// - with the control plane starved of CPU (seconds behind), requests through
//   both sidecars answer as their apiservers do.
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import type { SandboxApiserverState, SandboxState } from '../../src/tools/sandbox/state.js';
import { loadX509, toPem, newKeyPair, randomSerial, EC_SIGN_ALG, type IssuedCert } from '../../src/tools/sandbox/x509.js';
import { CONTROL_PLANE_CLUSTER } from '../../src/xds/bootstrap.js';
import { envoyAdminJson } from '../support/envoyAdmin.js';
import { freshKubectlCacheDir, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../src/model/discovery.js';

const NAMESPACE = 'default';
/**
 * How long the control plane stays paused. Not the 5 minutes: what
 * a sidecar does while it is away changes only until Envoy has noticed (its
 * health check within 1 s; the HTTP/2 keepalive on the ADS connection, a ping
 * every 30 s answered within 10 s, closes the connection by 40 s) and then
 * stays the same (the stream retried on a new connection, the last
 * configuration served, nothing that expires), so the pause lasts past that
 * and the test checks that both sidecars closed their ADS connection inside it.
 */
const PAUSE_MS = 60_000;
/** Served by v1.37.2 only: kas-a's sidecar reroutes it, and merges it into kas-a's discovery. */
const PEER_ONLY_GROUP = 'storagemigration.k8s.io';

interface Credentials {
  token?: string;
  cert?: string;
  key?: string;
}

interface Reply {
  status: number;
  body: string;
}

let tb: TestSandbox;
let state: SandboxState;
let ca: Buffer;
let kasA: SandboxApiserverState;
let kasB: SandboxApiserverState;

before(async () => {
  tb = await startTestSandbox([
    { name: 'kas-a', version: 'v1.36.3' },
    { name: 'kas-b', version: 'v1.37.2' },
  ]);
  state = tb.state();
  ca = readFileSync(state.ca);
  [kasA, kasB] = state.apiservers as [SandboxApiserverState, SandboxApiserverState];
});
after(() => tb?.sandbox.down());

function call(
  base: string,
  credentials: Credentials,
  method: string,
  path: string,
  opts: { agent?: Agent; body?: unknown; accept?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      base + path,
      {
        method,
        ca,
        ...(credentials.cert ? { cert: credentials.cert, key: credentials.key } : {}),
        headers: {
          accept: opts.accept ?? 'application/json',
          ...(credentials.token ? { authorization: `Bearer ${credentials.token}` } : {}),
          ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        agent: opts.agent ?? false,
        timeout: 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

/** A client certificate signed by the sandbox's cluster CA. */
async function clusterClientCert(subject: Record<string, string[]>): Promise<Credentials> {
  const x509 = await loadX509();
  const pki = tb.sandbox.pkiFiles();
  const caCert = new x509.X509Certificate(readFileSync(pki.ca.cert, 'utf8'));
  const caKey = await webcrypto.subtle.importKey(
    'pkcs8',
    x509.PemConverter.decode(readFileSync(pki.ca.key, 'utf8'))[0] as ArrayBuffer,
    { name: 'ECDSA', namedCurve: 'P-256' },
    false,
    ['sign'],
  );
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: new x509.Name([subject]),
    issuer: caCert.subjectName,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 3_600_000),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: EC_SIGN_ALG,
    extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  });
  const pem: Omit<IssuedCert, 'cert' | 'keys'> = toPem(cert, keys);
  return { cert: pem.certPem, key: pem.keyPem };
}

function fileCredentials(pair: { cert: string; key: string }): Credentials {
  return { cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8') };
}

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

async function selfSubjectReview(base: string, credentials: Credentials): Promise<UserInfo> {
  const reply = await call(base, credentials, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  assert.equal(reply.status, 201, reply.body);
  return (JSON.parse(reply.body) as { status: { userInfo: UserInfo } }).status.userInfo;
}

describe('the identity an apiserver sees through a sidecar is the one it derives itself', () => {
  test('SelfSubjectReview through every sidecar equals SelfSubjectReview direct, for the admin, an ordinary user and a user with a UID', async () => {
    const clients: Array<[string, Credentials]> = [
      ['admin', fileCredentials(state.clientCerts.admin)],
      ['ordinary user', fileCredentials(state.clientCerts.user)],
      ['user with a UID, several groups and UTF-8', await clusterClientCert({ CN: ['zoë'], O: ['team, a+b', 'équipe'], '1.3.6.1.4.1.57683.2': ['uid-42'] })],
    ];
    for (const [who, credentials] of clients) {
      for (const apiserver of [kasA, kasB]) {
        const direct = await selfSubjectReview(apiserver.direct, credentials);
        assert.ok(direct.extra?.['authentication.kubernetes.io/credential-id'], `${who}: the apiserver sets a credential id`);
        for (const sidecar of [kasA, kasB]) {
          assert.deepEqual(
            await selfSubjectReview(sidecar.sidecar ?? '', credentials),
            direct,
            `${who} through ${sidecar.name}'s sidecar vs ${apiserver.name} directly`,
          );
        }
      }
    }
    const uid = await selfSubjectReview(kasA.sidecar ?? '', clients[2]?.[1] ?? {});
    assert.deepEqual([uid.username, uid.uid], ['zoë', 'uid-42']);
  });

  test('RBAC outcomes through the sidecars match direct: the ordinary user may not list secrets, the admin may', async () => {
    const user = fileCredentials(state.clientCerts.user);
    const admin = fileCredentials(state.clientCerts.admin);
    for (const apiserver of [kasA, kasB]) {
      for (const base of [apiserver.direct, apiserver.sidecar ?? '']) {
        assert.equal((await call(base, user, 'GET', `/api/v1/namespaces/${NAMESPACE}/secrets`)).status, 403, base);
        assert.equal((await call(base, admin, 'GET', `/api/v1/namespaces/${NAMESPACE}/secrets`)).status, 200, base);
      }
    }
  });

  test('a client-sent X-Remote-User is ignored: an anonymous client stays anonymous through the sidecar', async () => {
    for (const apiserver of [kasA, kasB]) {
      const reply = await new Promise<number>((resolve, reject) => {
        const req = request(
          `${apiserver.sidecar ?? ''}/api/v1/namespaces/${NAMESPACE}/secrets`,
          { ca, headers: { 'X-Remote-User': 'mvproxy-admin', 'X-Remote-Group': 'system:masters' }, agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.equal(reply, 403, apiserver.name);
    }
  });
});

describe('with the control plane paused, killed and restarted, nothing fails', () => {
  test('mixed traffic through both sidecars fails no request and loses no watch event; merged discovery stays merged throughout', async (t) => {
    const token = tb.sandbox.adminBearerToken();
    const cert = fileCredentials(state.clientCerts.admin);
    const sidecars = [kasA, kasB].map((a) => a.sidecar ?? '');
    const failures: string[] = [];
    let requests = 0;
    let stopping = false;
    const created: string[] = [];

    // One watch per sidecar, opened before anything happens, kept to the end.
    const seen = sidecars.map(() => new Set<string>());
    const watches = sidecars.map((base, i) => {
      const req = request(
        `${base}/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&labelSelector=outage%3Dtest`,
        { ca, headers: { authorization: `Bearer ${token}` }, agent: false },
        (res) => {
          if (res.statusCode !== 200) failures.push(`watch through ${base}: ${res.statusCode}`);
          let buffered = '';
          res.on('data', (chunk: Buffer) => {
            buffered += chunk.toString('utf8');
            for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
              const line = buffered.slice(0, newline);
              buffered = buffered.slice(newline + 1);
              const event = JSON.parse(line) as { type: string; object: { metadata: { name: string } } };
              if (event.type === 'ADDED') seen[i]?.add(event.object.metadata.name);
            }
          });
          res.on('end', () => {
            if (!stopping) failures.push(`watch through ${base} ended early`);
          });
        },
      );
      req.on('error', (err) => {
        if (!stopping) failures.push(`watch through ${base}: ${err.message}`);
      });
      req.end();
      return req;
    });

    // Keep-alive connections, as real clients hold them, across the whole outage.
    const agents = sidecars.map(() => new Agent({ keepAlive: true, maxSockets: 4 }));
    const worker = async (i: number): Promise<void> => {
      const base = sidecars[i % 2] ?? '';
      const agent = agents[i % 2];
      const credentials: Credentials = i < 2 ? { token } : cert;
      let n = 0;
      while (!stopping) {
        n++;
        const name = `outage-${i}-${n}`;
        const steps: Array<[string, string, unknown, string | undefined, number]> = [
          ['POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, { metadata: { name, labels: { outage: 'test' } }, data: { n: String(n) } }, undefined, 201],
          ['GET', `/api/v1/namespaces/${NAMESPACE}/configmaps/${name}`, undefined, undefined, 200],
          ['GET', `/api/v1/namespaces/${NAMESPACE}/configmaps?labelSelector=outage%3Dtest&limit=5`, undefined, undefined, 200],
          ['GET', `/apis/${PEER_ONLY_GROUP}/v1/storageversionmigrations`, undefined, undefined, 200],
          ['GET', '/apis', undefined, AGGREGATED_DISCOVERY_JSON_ACCEPT, 200],
          ['GET', '/api', undefined, AGGREGATED_DISCOVERY_JSON_ACCEPT, 200],
        ];
        for (const [method, path, body, accept, expected] of steps) {
          requests++;
          try {
            const reply = await call(base, credentials, method, path, { ...(agent ? { agent } : {}), body, ...(accept ? { accept } : {}) });
            if (reply.status !== expected) failures.push(`${method} ${base}${path}: ${reply.status} ${reply.body.slice(0, 200)}`);
            else if (method === 'POST') created.push(name);
            // kas-a's sidecar answers merged discovery in every window, paused, dead and restarted included.
            else if (path === '/apis' && i % 2 === 0 && !reply.body.includes(`"${PEER_ONLY_GROUP}"`))
              failures.push(`GET ${base}/apis: not merged (no ${PEER_ONLY_GROUP})`);
          } catch (err) {
            failures.push(`${method} ${base}${path}: ${(err as Error).message}`);
          }
        }
      }
    };
    let apiResourcesCalls = 0;
    const kubectlLoop = async (): Promise<void> => {
      while (!stopping) {
        for (const a of [kasA, kasB]) {
          requests++;
          const result = await tb.kubectl(a.kubeconfig.sidecar ?? '', ['get', 'namespaces', `--cache-dir=${freshKubectlCacheDir()}`, '-o', 'name']);
          if (result.code !== 0) failures.push(`kubectl get namespaces through ${a.name}'s sidecar: ${result.stderr}`);
        }
        // The older apiserver's sidecar lists the peer-only resource to kubectl's discovery throughout.
        requests++;
        apiResourcesCalls++;
        const listed = await tb.kubectl(kasA.kubeconfig.sidecar ?? '', [
          'api-resources',
          `--api-group=${PEER_ONLY_GROUP}`,
          '-o',
          'name',
          `--cache-dir=${freshKubectlCacheDir()}`,
        ]);
        if (listed.code !== 0 || !listed.stdout.includes('storageversionmigrations'))
          failures.push(`kubectl api-resources through kas-a's sidecar: no storageversionmigrations (${listed.code}): ${listed.stdout}${listed.stderr}`);
      }
    };
    /** ADS connections a sidecar's Envoy closed because the control plane did not answer its HTTP/2 ping. */
    const keepaliveTimeouts = async (a: SandboxApiserverState): Promise<number> => {
      const stats = await envoyAdminJson<{ stats: Array<{ name: string; value: number }> }>(
        a.sidecarAdminSocket ?? '',
        `/stats?format=json&filter=^cluster\\.${CONTROL_PLANE_CLUSTER}\\.http2\\.keepalive_timeout$`,
      );
      return stats.stats[0]?.value ?? 0;
    };
    const groupsThroughKasA = async (): Promise<string[]> => {
      const reply = await call(kasA.sidecar ?? '', { token }, 'GET', '/apis', { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
      assert.equal(reply.status, 200);
      return (JSON.parse(reply.body) as { items: { metadata: { name: string } }[] }).items.map((g) => g.metadata.name);
    };
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

    assert.ok((await groupsThroughKasA()).includes(PEER_ONLY_GROUP), 'merged discovery before the outage');
    const load = Promise.all([...[0, 1, 2, 3].map(worker), kubectlLoop()]);
    await sleep(3_000);

    // What flowed inside each window, counted from its own start: requests answered and watch events seen.
    const eventsSeen = (): number[] => seen.map((names) => names.size);
    const timeoutsBefore = await Promise.all([kasA, kasB].map(keepaliveTimeouts));
    const pauseStart = { requests, events: eventsSeen(), apiResourcesCalls };
    const pauseEnd = Date.now() + PAUSE_MS;
    tb.sandbox.pauseControlPlane();
    await sleep(2_000);
    assert.ok((await groupsThroughKasA()).includes(PEER_ONLY_GROUP), 'while the control plane is paused, the last merged document pushed');
    await sleep(pauseEnd - Date.now());
    const timeoutsInPause = (await Promise.all([kasA, kasB].map(keepaliveTimeouts))).map((n, i) => n - (timeoutsBefore[i] ?? 0));
    const inPause = {
      requests: requests - pauseStart.requests,
      events: eventsSeen().map((n, i) => n - (pauseStart.events[i] ?? 0)),
      apiResources: apiResourcesCalls - pauseStart.apiResourcesCalls,
    };

    await tb.sandbox.killControlPlane();
    const deadStart = requests;
    await sleep(3_000);
    assert.ok((await groupsThroughKasA()).includes(PEER_ONLY_GROUP), 'while the control plane is dead, the last merged document pushed');
    const whileDead = requests - deadStart;
    await tb.sandbox.restartControlPlane();
    // From the restart on, every answer is merged: the old documents until the new control plane pushes its own.
    const restartEnd = Date.now() + 6_000;
    while (Date.now() < restartEnd) {
      assert.ok((await groupsThroughKasA()).includes(PEER_ONLY_GROUP), 'merged discovery across the restart');
      await sleep(200);
    }

    stopping = true;
    await load;
    // Every creation reaches both watches (the watch cache delivers within a moment).
    const settle = Date.now() + 10_000;
    while (seen.some((names) => created.some((name) => !names.has(name))) && Date.now() < settle) await sleep(200);
    for (const req of watches) req.destroy();
    for (const agent of agents) agent.destroy();

    assert.deepEqual(failures, [], `${failures.length} of ${requests} requests failed`);
    t.diagnostic(
      `inside the pause: ${inPause.requests} requests (${inPause.apiResources} kubectl api-resources), watch events ${inPause.events.join(' and ')}, ADS connections closed by keepalive ${timeoutsInPause.join(' and ')}; while dead: ${whileDead} requests`,
    );
    // The pause lasted past the moment each sidecar's Envoy gave up its ADS connection.
    for (const [i, n] of timeoutsInPause.entries())
      assert.ok(n >= 1, `ADS connections of ${[kasA, kasB][i]?.name}'s sidecar closed by keepalive inside the pause: ${n}`);
    // The load keeps flowing through each window, so "nothing failed" covers it (a stalled load would pass vacuously).
    assert.ok(inPause.requests >= 200, `requests inside the ${PAUSE_MS / 1000} s pause: ${inPause.requests}`);
    assert.ok(inPause.apiResources >= 3, `kubectl api-resources through kas-a's sidecar inside the pause: ${inPause.apiResources}`);
    for (const [i, n] of inPause.events.entries()) assert.ok(n >= 20, `watch events through ${sidecars[i]} inside the pause: ${n}`);
    assert.ok(whileDead >= 10, `requests while the control plane was dead: ${whileDead}`);
    seen.forEach((names, i) => {
      assert.deepEqual(
        created.filter((name) => !names.has(name)),
        [],
        `events missing from the watch through ${sidecars[i]}`,
      );
    });
  });
});

/**
 * The control plane starved of CPU, as a process on an overloaded node: it
 * runs a while (0.2 to 0.8 s, at random), then stands still 2.5 s, over and
 * over, its event loop seconds behind. A poll of an apiserver that goes out
 * late in a run gets its answer at once, but it waits unread past its 2 s
 * deadline; what the control plane then concludes, it has time to push.
 */
const STARVED_RUN_MS = [200, 800] as const;
const STARVED_STILL_MS = 2_500;
const STARVED_FOR_MS = 30_000;

describe('with the control plane starved of CPU while the apiservers serve, nothing fails', () => {
  test('requests through both sidecars answer as their apiservers do, the peer-only resource included', async (t) => {
    const token = tb.sandbox.adminBearerToken();
    const admin = state.controlPlane?.admin ?? '';
    const failures: string[] = [];
    let requests = 0;
    let stopping = false;
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    const lagMaxSeconds = async (): Promise<number> => {
      const metrics = await (await fetch(`${admin}/metrics`)).text();
      return Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1] ?? Number.NaN);
    };

    const worker = async (i: number): Promise<void> => {
      const base = [kasA, kasB][i % 2]?.sidecar ?? '';
      let n = 0;
      while (!stopping) {
        n++;
        const name = `starved-${i}-${n}`;
        const steps: Array<[string, string, unknown, number]> = [
          ['POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, { metadata: { name, labels: { starved: 'test' } } }, 201],
          ['GET', `/api/v1/namespaces/${NAMESPACE}/configmaps?labelSelector=starved%3Dtest&limit=5`, undefined, 200],
          // Served by kas-b only: rerouted by kas-a's sidecar, local to kas-b's.
          ['GET', `/apis/${PEER_ONLY_GROUP}/v1/storageversionmigrations`, undefined, 200],
        ];
        for (const [method, path, body, expected] of steps) {
          requests++;
          try {
            const reply = await call(base, { token }, method, path, { body });
            if (reply.status !== expected) failures.push(`${method} ${base}${path}: ${reply.status} ${reply.body.slice(0, 200)}`);
          } catch (err) {
            failures.push(`${method} ${base}${path}: ${(err as Error).message}`);
          }
        }
      }
    };

    await lagMaxSeconds(); // reading it starts the next interval's maximum afresh
    const load = Promise.all([0, 1, 2, 3].map(worker));
    const starvedUntil = Date.now() + STARVED_FOR_MS;
    const starvedStart = requests;
    try {
      while (Date.now() < starvedUntil) {
        await sleep(STARVED_RUN_MS[0] + Math.random() * (STARVED_RUN_MS[1] - STARVED_RUN_MS[0]));
        tb.sandbox.pauseControlPlane();
        await sleep(STARVED_STILL_MS);
        tb.sandbox.resumeControlPlane();
      }
    } finally {
      tb.sandbox.resumeControlPlane();
    }
    const whileStarved = requests - starvedStart;
    // And as it catches up.
    await sleep(5_000);
    stopping = true;
    await load;
    const lag = await lagMaxSeconds();

    t.diagnostic(`${whileStarved} requests while starved, ${requests} in all; the control plane's event loop lagged up to ${lag.toFixed(1)} s`);
    assert.deepEqual(failures, [], `${failures.length} of ${requests} requests failed`);
    // The starvation was real: the control plane fell further behind than a poll's 2 s deadline.
    assert.ok(lag > 2, `the control plane's event-loop lag reached only ${lag} s`);
    assert.ok(whileStarved >= 200, `requests while starved: ${whileStarved}`);
  });
});
