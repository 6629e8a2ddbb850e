// Loads the Kubernetes .proto declarations under proto/k8s once (discovery
// documents, their metadata, and the runtime.Unknown envelope).
import type protobuf from 'protobufjs';
import { join } from 'node:path';
import { loadProtoRoot, protoDir } from '../util/protoRoot.js';

const ENTRIES = ['k8s.io/api/apidiscovery/v2/generated.proto', 'k8s.io/apimachinery/pkg/runtime/generated.proto'];

export interface KubernetesProtoTypes {
  APIGroupDiscoveryList: protobuf.Type;
  Unknown: protobuf.Type;
  /** Legacy discovery (meta/v1). */
  APIVersions: protobuf.Type;
  APIGroupList: protobuf.Type;
  APIGroup: protobuf.Type;
  APIResourceList: protobuf.Type;
  APIResource: protobuf.Type;
  GroupVersionForDiscovery: protobuf.Type;
}

const META_V1 = 'k8s.io.apimachinery.pkg.apis.meta.v1';

let types: KubernetesProtoTypes | undefined;

export function kubernetesProtoTypes(): KubernetesProtoTypes {
  if (!types) {
    // Imports are written as upstream writes them ("k8s.io/..."), relative to proto/k8s.
    const root = loadProtoRoot(ENTRIES, [join(protoDir(`k8s/${ENTRIES[0]}`), 'k8s')]);
    types = {
      APIGroupDiscoveryList: root.lookupType('k8s.io.api.apidiscovery.v2.APIGroupDiscoveryList'),
      Unknown: root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown'),
      APIVersions: root.lookupType(`${META_V1}.APIVersions`),
      APIGroupList: root.lookupType(`${META_V1}.APIGroupList`),
      APIGroup: root.lookupType(`${META_V1}.APIGroup`),
      APIResourceList: root.lookupType(`${META_V1}.APIResourceList`),
      APIResource: root.lookupType(`${META_V1}.APIResource`),
      GroupVersionForDiscovery: root.lookupType(`${META_V1}.GroupVersionForDiscovery`),
    };
  }
  return types;
}
