// Which port each of the sandbox's components listens on: a fixed block
// from --base-port, else ports picked free by the kernel.
import { freePorts, assertPortFree } from './ports.js';

/** The TCP ports of a sandbox (sidecar admins are Unix sockets). */
export interface PortLayout {
  etcdClient: number;
  etcdPeer: number;
  controlPlaneAdmin: number;
  /** kube-controller-manager's secure port (healthz, metrics), when the sandbox runs one. */
  controllerManager: number;
  apiservers: number[];
  sidecars: number[];
  sidecarStats: number[];
}

/**
 * With --base-port: etcd at base and base+1, control-plane admin at base+2,
 * kube-controller-manager at base+3, apiservers from base+10, sidecars from base+20, their stats listeners from
 * base+30 (sidecar admins are Unix sockets).
 */
export async function allocatePorts(names: readonly string[], basePort: number | undefined): Promise<PortLayout> {
  const count = names.length;
  if (basePort !== undefined) {
    const base = basePort;
    const block = (offset: number): number[] => Array.from({ length: count }, (_, i) => base + offset + i);
    const layout: PortLayout = {
      etcdClient: base,
      etcdPeer: base + 1,
      controlPlaneAdmin: base + 2,
      controllerManager: base + 3,
      apiservers: block(10),
      sidecars: block(20),
      sidecarStats: block(30),
    };
    await assertPortFree(layout.etcdClient, 'etcd (client)');
    await assertPortFree(layout.etcdPeer, 'etcd (peer)');
    await assertPortFree(layout.controlPlaneAdmin, 'mvproxy admin');
    await assertPortFree(layout.controllerManager, 'kube-controller-manager');
    for (const [i, p] of layout.apiservers.entries()) await assertPortFree(p, `kube-apiserver ${names[i]}`);
    for (const [i, p] of layout.sidecars.entries()) await assertPortFree(p, `sidecar of ${names[i]}`);
    for (const [i, p] of layout.sidecarStats.entries()) await assertPortFree(p, `stats of the sidecar of ${names[i]}`);
    return layout;
  }
  const ports = await freePorts(4 + 3 * count);
  const take = (n: number): number[] => ports.splice(0, n);
  const [etcdClient, etcdPeer, controlPlaneAdmin, controllerManager] = take(4) as [number, number, number, number];
  return { etcdClient, etcdPeer, controlPlaneAdmin, controllerManager, apiservers: take(count), sidecars: take(count), sidecarStats: take(count) };
}
