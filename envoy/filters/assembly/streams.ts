// Which plugin (root) context each HTTP stream context belongs to, plus two
// words of per-stream state (the document filter's, see documentFilter.ts): a
// hash table u32 -> (u32, u32, u32) in unmanaged memory (open addressing,
// linear probing, backward-shift deletion). It produces no garbage for the
// collector, so the per-request path (context create, request headers,
// delete) never makes a collection necessary. It grows with the number of
// concurrent streams (doubling, the old table freed at once) and never
// shrinks. Key 0 marks an empty slot: Envoy's context ids start at 1.
// Entry: key u32, root u32, state word 0, state word 1 (16 bytes).

let table: usize = 0;
let capacity: u32 = 0; // a power of two
let used: u32 = 0;

const ENTRY: usize = 16;

function slotOf(key: u32, mask: u32): u32 {
  // Fibonacci hashing: context ids are sequential.
  return (key * 0x9e3779b1) & mask;
}

function entryAt(i: u32): usize {
  return table + <usize>i * ENTRY;
}

function insert(key: u32, value: u32, s0: u32, s1: u32): void {
  const mask = capacity - 1;
  let i = slotOf(key, mask);
  while (true) {
    const at = entryAt(i);
    const k = load<u32>(at);
    if (k == 0 || k == key) {
      if (k == 0) used++;
      store<u32>(at, key);
      store<u32>(at, value, 4);
      store<u32>(at, s0, 8);
      store<u32>(at, s1, 12);
      return;
    }
    i = (i + 1) & mask;
  }
}

function grow(): void {
  const oldTable = table;
  const oldCapacity = capacity;
  capacity = oldCapacity == 0 ? 64 : oldCapacity << 1;
  table = heap.alloc(<usize>capacity * ENTRY);
  memory.fill(table, 0, <usize>capacity * ENTRY);
  used = 0;
  for (let i: u32 = 0; i < oldCapacity; i++) {
    const at = oldTable + <usize>i * ENTRY;
    const k = load<u32>(at);
    if (k != 0) insert(k, load<u32>(at, 4), load<u32>(at, 8), load<u32>(at, 12));
  }
  if (oldTable != 0) heap.free(oldTable);
}

/** Records a stream and its plugin context, with its state words zero. */
export function streamSet(key: u32, value: u32): void {
  if (key == 0) return;
  if ((used + 1) * 2 > capacity) grow();
  insert(key, value, 0, 0);
}

function find(key: u32): usize {
  if (capacity == 0 || key == 0) return 0;
  const mask = capacity - 1;
  let i = slotOf(key, mask);
  while (true) {
    const at = entryAt(i);
    const k = load<u32>(at);
    if (k == key) return at;
    if (k == 0) return 0;
    i = (i + 1) & mask;
  }
}

/** The value for `key`, or 0. */
export function streamGet(key: u32): u32 {
  const at = find(key);
  return at == 0 ? 0 : load<u32>(at, 4);
}

/**
 * The address of the stream's two state words (u32 at +0 and +4), or 0 if
 * the stream is unknown. Valid until the next streamSet or streamDelete.
 */
export function streamState(key: u32): usize {
  const at = find(key);
  return at == 0 ? 0 : at + 8;
}

/** Removes `key`; returns whether it was there. */
export function streamDelete(key: u32): bool {
  if (capacity == 0 || key == 0) return false;
  const mask = capacity - 1;
  let i = slotOf(key, mask);
  while (true) {
    const k = load<u32>(entryAt(i));
    if (k == 0) return false;
    if (k == key) break;
    i = (i + 1) & mask;
  }
  // Backward-shift: move later entries of the probe run into the hole.
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const at = entryAt(j);
    const k = load<u32>(at);
    if (k == 0) break;
    const home = slotOf(k, mask);
    // Move k into the hole unless its home lies cyclically in (hole, j].
    const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
    if (!between) {
      memory.copy(entryAt(hole), at, ENTRY);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  memory.fill(entryAt(hole), 0, ENTRY);
  used--;
  return true;
}

/** Number of streams tracked (for tests of the bookkeeping). */
export function streamCount(): u32 {
  return used;
}
