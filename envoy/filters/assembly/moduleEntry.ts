// The ABI entry points both modules (identityModule.ts, documentModule.ts)
// export alike: the ABI marker, memory handed to the host, VM start, a
// stream context following its plugin context (streams.ts), and the stream
// callbacks neither filter uses. Each module re-exports them.
import { enter, leave } from "./gc";
import { streamSet } from "./streams";

export function proxy_abi_version_0_2_1(): void {}

export function proxy_on_memory_allocate(size: usize): usize {
  return heap.alloc(size);
}

export function malloc(size: usize): usize {
  return heap.alloc(size);
}

export function proxy_on_vm_start(_rootContextId: u32, _vmConfigurationSize: usize): bool {
  return true;
}

export function proxy_on_context_create(contextId: u32, parentContextId: u32): void {
  enter();
  if (parentContextId != 0) streamSet(contextId, parentContextId);
  leave();
}

export function proxy_on_done(_contextId: u32): bool {
  return true;
}

export function proxy_on_log(_contextId: u32): void {}
