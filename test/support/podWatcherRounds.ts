// Pure: what the pod stand-in (podWatcher.ts) saw, judged as the issue asks of
// the `kubernetes` Service's switch: the set of endpoints never empty, and no
// listed endpoint failing to answer for longer than a bound.

/** One round of the watcher. */
export interface WatchRound {
  /** Epoch ms at the round's start. */
  at: number;
  /** The bootstrap the slices were read from; '' when none answered (the round saw nothing). */
  readFrom: string;
  slices: { name: string; port: number; addresses: string[] }[];
  /** /version at every listed endpoint: status 0 with the error's code when no answer came. */
  answers: { address: string; port: number; status: number; error?: string }[];
}

/** `address:port` of every endpoint a round lists, sorted, without repeats. */
export function listedEndpoints(round: WatchRound): string[] {
  return [...new Set(round.slices.flatMap((s) => s.addresses.map((a) => `${a}:${s.port}`)))].sort();
}

/** Rounds that read the slices and found no endpoint in any of them. */
export function emptyRounds(rounds: readonly WatchRound[]): WatchRound[] {
  return rounds.filter((r) => r.readFrom !== '' && listedEndpoints(r).length === 0);
}

/** The longest time one endpoint stayed listed without answering. */
export interface Outage {
  endpoint: string;
  ms: number;
  /** The error of its first failed round. */
  error: string;
}

/**
 * For every endpoint, each stretch of consecutive reading rounds in which it
 * was listed and gave no answer, measured from the first such round to the
 * round that ended it (it answered, or was no longer listed), or to the last
 * round. Rounds that read nothing neither extend nor end a stretch. The
 * longest stretch, or undefined when every listed endpoint always answered.
 */
export function longestOutage(rounds: readonly WatchRound[]): Outage | undefined {
  const open = new Map<string, { since: number; error: string }>();
  let longest: Outage | undefined;
  const close = (endpoint: string, at: number): void => {
    const o = open.get(endpoint);
    if (!o) return;
    open.delete(endpoint);
    if (!longest || at - o.since > longest.ms) longest = { endpoint, ms: at - o.since, error: o.error };
  };
  for (const round of rounds) {
    if (round.readFrom === '') continue;
    const failing = new Map(round.answers.filter((a) => a.status === 0).map((a) => [`${a.address}:${a.port}`, a.error ?? 'no answer']));
    for (const endpoint of [...open.keys()]) if (!failing.has(endpoint)) close(endpoint, round.at);
    for (const [endpoint, error] of failing) if (!open.has(endpoint)) open.set(endpoint, { since: round.at, error });
  }
  const last = rounds.at(-1)?.at ?? 0;
  for (const endpoint of [...open.keys()]) close(endpoint, last);
  return longest;
}
