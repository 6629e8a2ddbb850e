// The admin service's gRPC server reflection, as grpcurl uses it: clients
// need no copy of the proto.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { deadline, fakeBackend, harness } from '../../support/adminApiHarness.js';

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}

/** The reflection service client of one API version, from the proto @grpc/reflection ships. */
function reflectionClient(version: 'v1' | 'v1alpha', address: string): grpc.Client {
  const protoRoot = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');
  const definition = protoLoader.loadSync(`grpc/reflection/${version}/reflection.proto`, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    includeDirs: [protoRoot],
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { grpc: { reflection: Record<string, { ServerReflection: typeof grpc.Client }> } };
  const Client = pkg.grpc.reflection[version]?.ServerReflection;
  assert.ok(Client, `grpc.reflection.${version}.ServerReflection in the shipped proto`);
  return new Client(address, grpc.credentials.createInsecure());
}

/** One request, one response on a ServerReflectionInfo stream. */
function reflect(client: grpc.Client, request: Record<string, string>): Promise<ReflectionResponse> {
  const stream = (
    client as unknown as { ServerReflectionInfo(options: grpc.CallOptions): grpc.ClientDuplexStream<unknown, ReflectionResponse> }
  ).ServerReflectionInfo(deadline());
  return new Promise<ReflectionResponse>((resolve, reject) => {
    stream.once('data', (response: ReflectionResponse) => {
      resolve(response);
      stream.end();
    });
    stream.on('error', reject);
    stream.write(request);
  });
}

describe('admin API reflection', () => {
  for (const version of ['v1', 'v1alpha'] as const) {
    it(`grpc.reflection.${version}.ServerReflection lists mvproxy.admin.v1.Admin`, async (t) => {
      const h = await harness(t, fakeBackend());
      const client = reflectionClient(version, h.address);
      t.after(() => client.close());
      const response = await reflect(client, { list_services: '' });
      assert.equal(response.error_response, undefined);
      const names = (response.list_services_response?.service ?? []).map((s) => s.name);
      assert.ok(names.includes('mvproxy.admin.v1.Admin'), `listed: ${names.join(', ')}`);
    });
  }

  it('reflection answers the file declaring mvproxy.admin.v1.Admin, so clients need no proto', async (t) => {
    const h = await harness(t, fakeBackend());
    const client = reflectionClient('v1', h.address);
    t.after(() => client.close());
    const response = await reflect(client, { file_containing_symbol: 'mvproxy.admin.v1.Admin' });
    assert.equal(response.error_response, undefined);
    const files = response.file_descriptor_response?.file_descriptor_proto ?? [];
    assert.ok(files.length > 0, 'at least one file descriptor');
    // A serialized FileDescriptorProto holds its package and service names as plain strings.
    const bytes = Buffer.concat(files.map((f) => Buffer.from(f))).toString('latin1');
    assert.ok(bytes.includes('mvproxy.admin.v1'), 'the package name');
    assert.ok(bytes.includes('Admin') && bytes.includes('GetStatus') && bytes.includes('Explain'), 'the service and its methods');
  });
});
