// The `kubernetes` Service's ClusterIP from the cluster's Service range, as
// kubeadm and kube-apiserver pick it: the first address after the range's
// network address (`10.96.0.0/12` gives 10.96.0.1). The replicas verify each
// sidecar's certificate against it, as pods that dial it do (serve config
// `kubernetesService.clusterIp`). Pure.
import { isIP } from 'node:net';

/** kubeadm's default `networking.serviceSubnet` (kube-apiserver's --service-cluster-ip-range). */
export const KUBEADM_SERVICE_SUBNET = '10.96.0.0/12';

/**
 * The first usable address of `cidr`; of a dual-stack `v4cidr,v6cidr`, of the
 * first range, which the `kubernetes` Service's ClusterIP is taken from.
 */
export function kubernetesServiceIp(cidr: string): string {
  const first = cidr.split(',')[0]?.trim() ?? '';
  const m = /^([^/]+)\/(\d{1,3})$/.exec(first);
  const family = isIP(m?.[1] ?? '');
  const bits = family === 6 ? 128 : 32;
  const prefix = Number(m?.[2]);
  // A range of one address (or two, IPv4 /31) has no room for the network address and a Service.
  if (!m || family === 0 || !(prefix <= bits - 2)) throw new Error(`${JSON.stringify(cidr)} is not a Service range (IP/PREFIX, at least 4 addresses)`);
  const host = (1n << BigInt(bits - prefix)) - 1n;
  const value = (toBigInt(m[1] ?? '', family) & ~host) + 1n;
  return family === 4 ? v4Text(value) : v6Text(value);
}

function toBigInt(ip: string, family: number): bigint {
  if (family === 4) return ip.split('.').reduce((n, octet) => (n << 8n) | BigInt(Number(octet)), 0n);
  // The URL parser writes any IPv6 form (an embedded IPv4 too) as hex groups around at most one `::`.
  const canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const padded = tail === undefined ? groups(head) : [...groups(head), ...Array(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  return padded.reduce((n, group) => (n << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function v4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function v6Text(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
