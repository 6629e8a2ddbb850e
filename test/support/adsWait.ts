// Waiting for an Envoy (real or fake) to answer what the ADS server sent,
// through the server's public surface only: its ack/nack events and status().
import type { AdsServer, NackEvent } from '../../src/servers/ads.js';
import { messageName, type ResourceTypeUrl } from '../../src/xds/snapshot.js';

/** waitForAck rejects with this when Envoy rejects the awaited version. */
export class NackError extends Error {
  constructor(readonly nack: NackEvent) {
    super(`${nack.node} rejected ${messageName(nack.typeUrl)} version ${nack.version}: ${nack.message}`);
    this.name = 'NackError';
  }
}

/** True when the node's open stream has ACKed this version of the type. */
export function hasAcked(ads: AdsServer, node: string, typeUrl: ResourceTypeUrl, version: string): boolean {
  const status = ads.status()[node];
  return status !== undefined && status.connected > 0 && status.types[typeUrl]?.versionAcked === version;
}

/**
 * Resolves once an open stream of the node ACKs the version; rejects with a
 * NackError if Envoy rejects that version, or on timeout.
 */
export function waitForAck(ads: AdsServer, node: string, typeUrl: ResourceTypeUrl, version: string, timeoutMs: number): Promise<void> {
  if (hasAcked(ads, node, typeUrl, version)) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const matches = (event: { node: string; typeUrl: ResourceTypeUrl; version: string }): boolean =>
      event.node === node && event.typeUrl === typeUrl && event.version === version;
    const cleanup = (): void => {
      clearTimeout(timer);
      ads.off('ack', onAck);
      ads.off('nack', onNack);
    };
    const onAck = (event: { node: string; typeUrl: ResourceTypeUrl; version: string }): void => {
      if (!matches(event)) return;
      cleanup();
      resolve();
    };
    const onNack = (event: NackEvent): void => {
      if (!matches(event)) return;
      cleanup();
      reject(new NackError(event));
    };
    const timer = setTimeout(() => {
      cleanup();
      const seen = JSON.stringify(ads.status()[node]?.types[typeUrl] ?? null);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${node} to ACK ${messageName(typeUrl)} ${version} (status: ${seen})`));
    }, timeoutMs);
    ads.on('ack', onAck);
    ads.on('nack', onNack);
  });
}

/** Resolves with the NACK when the node rejects (or has rejected) this version of the type. */
export function waitForNack(ads: AdsServer, node: string, typeUrl: ResourceTypeUrl, version: string, timeoutMs: number): Promise<NackEvent> {
  const previous = ads.status()[node]?.types[typeUrl]?.lastNack;
  if (previous?.version === version) {
    return Promise.resolve({ node, typeUrl, version, nonce: '', message: previous.message });
  }
  return new Promise<NackEvent>((resolve, reject) => {
    const onNack = (event: NackEvent): void => {
      if (event.node !== node || event.typeUrl !== typeUrl || event.version !== version) return;
      clearTimeout(timer);
      ads.off('nack', onNack);
      resolve(event);
    };
    const timer = setTimeout(() => {
      ads.off('nack', onNack);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${node} to NACK ${messageName(typeUrl)} ${version}`));
    }, timeoutMs);
    ads.on('nack', onNack);
  });
}
