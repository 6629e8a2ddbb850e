// The control plane's event journal: a bounded ring of recent events (what
// changed and why: src/model/events.ts and src/planner/planEvents.ts derive
// them) that `mvproxy admin events` and the status page read, and that
// followers are told of as they happen.
import type { AdsServer } from '../servers/ads.js';
import type { ClusterModel } from '../model/cluster.js';
import { drainEvents, modelEvents, shortTypeName, type ClusterEvent, type JournalEntry, type StandingModel } from '../model/events.js';
import type { Standings } from '../model/liveness.js';
import type { SidecarPlan } from '../planner/plan.js';
import { planEvents } from '../planner/planEvents.js';

export type JournalListener = (entry: JournalEntry) => void;

export const DEFAULT_JOURNAL_CAPACITY = 1000;

export class EventJournal {
  private readonly ring: JournalEntry[] = [];
  private readonly listeners = new Set<JournalListener>();
  private sequence = 0;

  constructor(private readonly capacity: number = DEFAULT_JOURNAL_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`journal capacity: a positive integer, got ${capacity}`);
  }

  /** Keeps the events (dropping the oldest beyond capacity) and tells every follower. */
  record(events: readonly ClusterEvent[]): void {
    for (const event of events) {
      const entry: JournalEntry = { ...event, sequence: ++this.sequence };
      this.ring.push(entry);
      if (this.ring.length > this.capacity) this.ring.shift();
      for (const listener of [...this.listeners]) {
        try {
          listener(entry);
        } catch {
          // One follower's failure is its own; the journal and the others go on.
        }
      }
    }
  }

  /** The kept events, oldest first; with `limit`, only the newest that many. */
  recent(limit?: number): JournalEntry[] {
    return limit === undefined || limit >= this.ring.length ? [...this.ring] : this.ring.slice(this.ring.length - limit);
  }

  /** Calls `listener` with every event recorded from now on, until the returned function is called. */
  follow(listener: JournalListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  get followers(): number {
    return this.listeners.size;
  }
}

/**
 * What the running control plane feeds the journal: each reconcile (model and
 * plans), each change of drains, and the ADS server's stream, ACK and NACK
 * events. Keeps the previous model and plans to diff against.
 */
export class ControlPlaneJournal {
  readonly journal: EventJournal;
  private last: StandingModel | undefined;
  private lastPlans: readonly SidecarPlan[] = [];
  /** Per node and type: the version whose NACK was recorded (Envoy repeats a NACK; the journal says it once). */
  private readonly nacked = new Map<string, string>();

  constructor(
    private readonly clock: () => number,
    capacity?: number,
  ) {
    this.journal = new EventJournal(capacity);
  }

  /** `standings`: the reconcile's (serve/reconcile.ts), the very ones its plans and merges were made with. */
  reconciled(model: ClusterModel, plans: readonly SidecarPlan[], standings: Standings): void {
    const next: StandingModel = { model, standings };
    const events = model === this.last?.model ? [] : modelEvents(this.last, next);
    // A plan changes when the model or the drains do: now, not when the model was observed.
    events.push(...planEvents(this.lastPlans, plans, this.clock()));
    this.last = next;
    this.lastPlans = plans;
    this.journal.record(events);
  }

  /** `how` says who asked; `notes`, what the drain record keeps with each drain (preferred when there is one). */
  drains(before: ReadonlySet<string>, after: ReadonlySet<string>, how: string, notes: Readonly<Record<string, string>> = {}): void {
    const said = (name: string): string => {
      const note = Object.hasOwn(notes, name) ? notes[name] : undefined;
      // Anyone who may write the record wrote this: one short line.
      return note ? note.replace(/\s+/g, ' ').slice(0, 200) : how;
    };
    this.journal.record(drainEvents(before, after, this.clock(), said));
  }

  /** Follows the ADS server's connects, disconnects and NACKs (with Envoy's message). */
  attach(ads: AdsServer): void {
    ads.on('connect', ({ node }) => this.one('sidecar-connected', node, 'ADS stream opened'));
    ads.on('disconnect', ({ node }) => this.one('sidecar-disconnected', node, 'ADS stream closed'));
    ads.on('ack', ({ node, typeUrl }) => this.nacked.delete(`${node} ${typeUrl}`));
    ads.on('nack', ({ node, typeUrl, version, message }) => {
      const key = `${node} ${typeUrl}`;
      if (this.nacked.get(key) === version) return;
      this.nacked.set(key, version);
      this.one('nack', node, `rejected ${shortTypeName(typeUrl)} ${version}: ${message}`);
    });
  }

  private one(kind: ClusterEvent['kind'], subject: string, message: string): void {
    this.journal.record([{ at: this.clock(), kind, subject, message }]);
  }
}
