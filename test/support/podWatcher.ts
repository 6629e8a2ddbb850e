// A pod stand-in that keeps watching (network mode `namespace`; run with node
// inside the sandbox's network namespace): every round it reads the
// `kubernetes` Service's EndpointSlices (from the first of `bootstraps` that
// answers, as kube-proxy keeps reading through whatever endpoint works), then
// GETs /version on a new connection at every listed address, verifying the
// ClusterIP as pods do (podHttp.ts). One JSON line (WatchRound) per round on
// stdout, until SIGTERM. The e2e judges the rounds (podWatcherRounds.ts).
// Usage: node podWatcher.js '{"bootstraps":["192.0.2.11:6444",...],"ca":...,"token":...,"clusterIp":...,"intervalMs":500}'
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSlices, podGet, SERVICE_SLICES_PATH } from '../../src/tools/sandbox/podHttp.js';
import type { WatchRound } from './podWatcherRounds.js';

interface PodWatcherInput {
  bootstraps: string[];
  /** The cluster CA file. */
  ca: string;
  token: string;
  clusterIp: string;
  intervalMs: number;
}

/** How long one address may take to answer before the round counts it as failed. */
const ANSWER_TIMEOUT_MS = 2000;

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : (err as Error).message;
}

async function round(input: PodWatcherInput, ca: string): Promise<WatchRound> {
  const who = { ...input, ca };
  const at = Date.now();
  for (const bootstrap of input.bootstraps) {
    const [host, port] = bootstrap.split(':') as [string, string];
    let body: string;
    try {
      const listed = await podGet(who, host, Number(port), SERVICE_SLICES_PATH, ANSWER_TIMEOUT_MS);
      if (listed.status !== 200) continue;
      body = listed.body;
    } catch {
      continue;
    }
    const slices = parseSlices(body).map((s) => ({ name: s.name, port: s.ports[0]?.port ?? 0, addresses: s.addresses }));
    const answers = await Promise.all(
      slices.flatMap((s) =>
        s.addresses.map(async (address) => {
          try {
            const answer = await podGet(who, address, s.port, '/version', ANSWER_TIMEOUT_MS);
            return { address, port: s.port, status: answer.status };
          } catch (err) {
            return { address, port: s.port, status: 0, error: errorCode(err) };
          }
        }),
      ),
    );
    return { at, readFrom: bootstrap, slices, answers };
  }
  return { at, readFrom: '', slices: [], answers: [] };
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as PodWatcherInput;
  const ca = readFileSync(input.ca, 'utf8');
  let running = true;
  process.on('SIGTERM', () => {
    running = false;
  });
  while (running) {
    const began = Date.now();
    process.stdout.write(`${JSON.stringify(await round(input, ca))}\n`);
    await sleep(Math.max(0, input.intervalMs - (Date.now() - began)));
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
