// The peer nodes of a set (documents.ts), as every splicer reads them: a
// node's children, a child found by name (marked seen or not), and the
// legacy name of a resource-list entry ("resource" or "resource/subresource").
import { N_CHILDREN, N_CHILD_COUNT, N_NAME, N_NAME_LEN, N_SEEN, nodeAt } from "./documents";

/** The first of the node's children (its versions, resources or subresources). */
export function children(node: usize): usize {
  return <usize>load<u32>(node + N_CHILDREN);
}

export function childCount(node: usize): u32 {
  return load<u32>(node + N_CHILD_COUNT);
}

/** The node among `count` at `first` named [p, p + n), or 0 (nothing marked). */
export function nodeNamed(first: usize, count: u32, p: usize, n: usize): usize {
  for (let i: u32 = 0; i < count; i++) {
    const node = nodeAt(first, i);
    if (<usize>load<u32>(node + N_NAME_LEN) == n && memory.compare(<usize>load<u32>(node + N_NAME), p, n) == 0) return node;
  }
  return 0;
}

/** The node among `count` at `first` named [p, p + n), marked seen (the local document names it); 0 if none. */
export function markNamed(first: usize, count: u32, p: usize, n: usize): usize {
  const node = nodeNamed(first, count, p, n);
  if (node != 0) store<u32>(node + N_SEEN, 1);
  return node;
}

/** Marks the resource, or the subresource of "resource/subresource", that the legacy name [p, p + n) names among the version's children. */
export function markLegacyName(version: usize, p: usize, n: usize): void {
  let slash: usize = 0;
  while (slash < n && load<u8>(p + slash) != 0x2f) slash++;
  if (slash == n) {
    markNamed(children(version), childCount(version), p, n);
    return;
  }
  const resource = nodeNamed(children(version), childCount(version), p, slash);
  if (resource != 0) markNamed(children(resource), childCount(resource), p + slash + 1, n - slash - 1);
}
