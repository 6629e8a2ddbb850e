// The `kubernetesService` part of the serve config (issue 21): whether this
// replica publishes the `kubernetes` Service's endpoints, and the only
// addresses it may ever publish: each sidecar's (`sidecar.publish`, default
// `sidecar.listen`) and each apiserver's own (`publish`, default `address`),
// from the operator's file alone. The defaults apply only to an address pods
// can reach (an IP address, not unspecified, loopback, link-local or
// multicast: kube-apiserver refuses those in Endpoints); a sidecar without
// one is a problem, an apiserver without one is never listed directly.
import { BlockList, isIP } from 'node:net';
import type { NetworkAddress } from '../model/cluster.js';
import { formatHost } from '../model/cluster.js';
import type { AddressFamily, PublishPlan, PublishTarget } from '../model/publication.js';
import type { ConfigMapRef } from '../sources/configMapRecord.js';
import { compareStrings } from '../util/order.js';

export interface KubernetesServiceConfig {
  /** The ConfigMap where each replica writes what it observed (sources/livenessRecord.ts). */
  livenessRecord: ConfigMapRef;
  /** The Service's ClusterIP (`clusterIp`): pods dial it, so the probes verify each certificate against it (sources/readyzProbe.ts). */
  clusterIp: string;
  plan: PublishPlan;
}

/** One apiserver entry of the config, as far as publishing goes. */
export interface PublishInput {
  name: string;
  address: NetworkAddress;
  publish?: NetworkAddress;
  sidecar: NetworkAddress & { publish?: NetworkAddress };
}

// One list per family: a list holding the IPv4-mapped range would match every IPv4 address.
const SPECIAL_V4 = new BlockList();
SPECIAL_V4.addSubnet('0.0.0.0', 8, 'ipv4');
SPECIAL_V4.addSubnet('127.0.0.0', 8, 'ipv4');
SPECIAL_V4.addSubnet('169.254.0.0', 16, 'ipv4');
SPECIAL_V4.addSubnet('224.0.0.0', 4, 'ipv4');
SPECIAL_V4.addAddress('255.255.255.255', 'ipv4');
const SPECIAL_V6 = new BlockList();
SPECIAL_V6.addAddress('::', 'ipv6');
SPECIAL_V6.addAddress('::1', 'ipv6');
SPECIAL_V6.addSubnet('fe80::', 10, 'ipv6');
SPECIAL_V6.addSubnet('ff00::', 8, 'ipv6');
SPECIAL_V6.addSubnet('::ffff:0:0', 96, 'ipv6');

/** Why pods cannot be sent to `host`, or undefined when they can. */
export function unpublishableReason(host: string): string | undefined {
  const family = isIP(host);
  if (family === 0) return 'not an IP address (Endpoints list addresses, not names)';
  if (family === 4 ? SPECIAL_V4.check(host, 'ipv4') : SPECIAL_V6.check(host, 'ipv6'))
    return 'an unspecified, loopback, link-local, multicast or IPv4-mapped address';
  return undefined;
}

/** The form the API keeps (IPv6 compressed, lower case), so what is read compares equal to what was written. */
export function canonicalIp(host: string): string {
  return isIP(host) === 6 ? new URL(`http://[${host}]/`).hostname.replace(/^\[|\]$/g, '') : host;
}

/**
 * The plan, or undefined after adding to `problems` everything that keeps it
 * from being one: a sidecar with no publishable address, addresses of both
 * families, sidecars (or apiservers) on different ports, an address used twice.
 */
export function publishPlan(apiservers: PublishInput[], problems: string[]): PublishPlan | undefined {
  const before = problems.length;
  const targets: PublishTarget[] = [];
  const sidecarPorts = new Set<number>();
  const apiserverPorts = new Set<number>();
  const families = new Set<AddressFamily>();
  const used = new Map<string, string>();
  const take = (field: string, address: NetworkAddress, port: Set<number>): string => {
    const ip = canonicalIp(address.host);
    families.add(isIP(ip) === 6 ? 'IPv6' : 'IPv4');
    port.add(address.port);
    const key = formatHost({ host: ip, port: address.port });
    const other = used.get(key);
    if (other !== undefined) problems.push(`${field}: ${key} is also ${other}`);
    used.set(key, field);
    return ip;
  };
  for (const a of apiservers) {
    const at = `apiservers.${a.name}`;
    const explicit = a.sidecar.publish;
    const listenProblem = unpublishableReason(a.sidecar.host);
    let sidecar: NetworkAddress | undefined;
    if (explicit) {
      const why = unpublishableReason(explicit.host);
      if (why) problems.push(`${at}.sidecar.publish: ${formatHost(explicit)} is ${why}`);
      else sidecar = explicit;
    } else if (listenProblem) {
      problems.push(
        `${at}.sidecar.publish: required while kubernetesService.publish is true (sidecar.listen ${formatHost(a.sidecar)} is ${listenProblem}): the address pods reach this sidecar at`,
      );
    } else sidecar = { host: a.sidecar.host, port: a.sidecar.port };
    let apiserver: NetworkAddress | undefined;
    if (a.publish) {
      const why = unpublishableReason(a.publish.host);
      if (why) problems.push(`${at}.publish: ${formatHost(a.publish)} is ${why}`);
      else apiserver = a.publish;
    } else if (!unpublishableReason(a.address.host)) apiserver = a.address;
    if (!sidecar) continue;
    const target: PublishTarget = { name: a.name, sidecarIp: take(`${at}.sidecar.publish`, sidecar, sidecarPorts) };
    if (apiserver) target.apiserverIp = take(`${at}.publish`, apiserver, apiserverPorts);
    targets.push(target);
  }
  if (families.size > 1) problems.push('kubernetesService: every published address must be of one family (IPv4 or IPv6), as the Service is');
  if (sidecarPorts.size > 1)
    problems.push(
      `kubernetesService: every sidecar must be published on one port (an EndpointSlice has one port for all its endpoints), got ${[...sidecarPorts].join(', ')}`,
    );
  if (apiserverPorts.size > 1) problems.push(`kubernetesService: every apiserver must be published on one port, got ${[...apiserverPorts].join(', ')}`);
  const [family] = families;
  const [sidecarPort] = sidecarPorts;
  const [apiserverPort] = apiserverPorts;
  if (problems.length > before || family === undefined || sidecarPort === undefined) return undefined;
  return {
    family,
    sidecarPort,
    ...(apiserverPort === undefined ? {} : { apiserverPort }),
    targets: targets.sort((x, y) => compareStrings(x.name, y.name)),
  };
}
