// Garbage collection at safe points: the nesting of host callbacks and the
// debt of managed garbage piled up since the last collection; the collector
// runs at the end of an outermost callback once the debt is high.

/** Nesting of callbacks from the host (a host call could call back in). */
let depth: i32 = 0;
/** Managed garbage produced since the last collection, in rough units. */
let debt: i32 = 0;
/** Collect after about this much (a miss is 64 units). */
export const DEBT_LIMIT: i32 = 2048;

/** Records managed garbage produced (a miss is 64 units; DEBT_LIMIT collects at the next safe point). */
// @ts-ignore: decorator
@inline
export function addDebt(units: i32): void {
  debt += units;
}

export function enter(): void {
  depth++;
}

/** Leaves a callback; at the outermost level, collects when debt is high. */
export function leave(): void {
  depth--;
  if (depth == 0 && debt >= DEBT_LIMIT) {
    debt = 0;
    __collect();
  }
}
