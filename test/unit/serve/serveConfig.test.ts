import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseServeConfig, ConfigError, LIMITS, isLoopback, type ServeConfig } from '../../../src/serve/config.js';
import { repoFile } from '../../../src/util/protoRoot.js';

const valid = {
  kubeconfig: 'kc',
  apiservers: [
    { name: 'kas-a', hostname: 'node-1', address: '10.0.0.1:6444', sidecar: { listen: '10.0.0.1:6443', servingCert: 'a.crt', servingKey: 'a.key' } },
    { name: 'kas-b', hostname: 'node-2', address: '10.0.0.2:6444', sidecar: { listen: '10.0.0.2:6443', servingCert: 'b.crt', servingKey: 'b.key' } },
  ],
  tls: { clientCa: 'ca.crt', frontProxyClientCert: 'fp.crt', frontProxyClientKey: 'fp.key', peerCa: 'ca.crt' },
  xds: { unixSocket: 'xds.sock' },
};

/** The setting each number of the file gives, and the factor from its unit: durations become milliseconds. */
const SETTING_OF: Record<keyof typeof LIMITS, [keyof ServeConfig, number]> = {
  departedGraceSeconds: ['departedGraceMs', 1000],
  localOnlyGraceSeconds: ['localOnlyGraceMs', 1000],
  discoveryPollMillis: ['discoveryPollMs', 1],
  discoveryMaxBodyBytes: ['discoveryMaxBodyBytes', 1],
  requestTimeoutSeconds: ['requestTimeoutSeconds', 1],
  certificatePollMillis: ['certificatePollMs', 1],
};

function problemsOf(raw: unknown): string[] {
  try {
    parseServeConfig(raw as never, '/etc/mvproxy', false);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

describe('serve configuration', () => {
  it('a complete configuration parses, with paths resolved against its folder', () => {
    const config = parseServeConfig(valid, '/etc/mvproxy', false);
    assert.equal(config.kubeconfig, '/etc/mvproxy/kc');
    assert.deepEqual(config.apiservers[1]?.address, { host: '10.0.0.2', port: 6444 });
    assert.equal(config.tls.peerServerName, 'kubernetes.default.svc');
    assert.equal(config.xds.unixSocket, '/etc/mvproxy/xds.sock');
    assert.equal(config.departedGraceMs, 300_000);
  });

  it('the example in deploy/ is a valid configuration, and each number it sets is the default', () => {
    const example = JSON.parse(readFileSync(repoFile('deploy/mvproxy.example.json'), 'utf8')) as Record<string, unknown>;
    assert.doesNotThrow(() => parseServeConfig(example, '/etc/mvproxy', false));
    for (const [field, [, , fallback]] of Object.entries(LIMITS)) if (field in example) assert.equal(example[field], fallback, field);
  });

  it('every problem is reported at once, naming its field', () => {
    const problems = problemsOf({ apiservers: [{ name: 'Bad_Name', address: 'nowhere' }], tls: {}, xds: {} });
    for (const field of [
      'kubeconfig',
      'apiservers[0].name',
      'apiservers[0].hostname',
      'apiservers[0].address',
      'apiservers[0].sidecar',
      'tls.clientCa',
      'xds',
    ]) {
      assert.ok(
        problems.some((p) => p.startsWith(field)),
        `expected a problem about ${field} in ${JSON.stringify(problems)}`,
      );
    }
  });

  it('two apiservers with the same hostname are contradictory', () => {
    const second = { ...valid.apiservers[1], hostname: 'node-1' };
    assert.ok(problemsOf({ ...valid, apiservers: [valid.apiservers[0], second] }).some((p) => /hostname node-1 is used twice/.test(p)));
  });

  it('a sidecar listening on its own apiserver address is contradictory', () => {
    const a = { ...valid.apiservers[0], sidecar: { ...valid.apiservers[0]?.sidecar, listen: '10.0.0.1:6444' } };
    assert.ok(problemsOf({ ...valid, apiservers: [a] }).some((p) => /sidecar.listen and address are the same/.test(p)));
  });

  it('a port out of range is rejected', () => {
    const a = { ...valid.apiservers[0], address: '10.0.0.1:70000' };
    assert.ok(problemsOf({ ...valid, apiservers: [a] }).some((p) => /is not host:port/.test(p)));
  });

  it('a peer egress proxy is read as host:port', () => {
    assert.deepEqual(parseServeConfig({ ...valid, peerEgressProxy: 'proxy.internal:3128' }, '/etc/mvproxy', false).peerEgressProxy, {
      host: 'proxy.internal',
      port: 3128,
    });
    assert.ok(problemsOf({ ...valid, peerEgressProxy: 'no-port' }).some((p) => p.startsWith('peerEgressProxy')));
  });

  it('the admin section gives the HTTP listener and the admin API socket, resolved against the config folder', () => {
    const config = parseServeConfig({ ...valid, admin: { listen: '127.0.0.1:9464', socket: 'admin.sock' } }, '/etc/mvproxy', false);
    assert.deepEqual(config.admin, { listen: { host: '127.0.0.1', port: 9464 }, socket: '/etc/mvproxy/admin.sock' });
  });

  it('the warm-start file is optional and resolved against the config folder', () => {
    assert.equal(parseServeConfig(valid, '/etc/mvproxy', false).warmStartFile, undefined);
    assert.equal(parseServeConfig({ ...valid, warmStartFile: 'state/warm.json' }, '/etc/mvproxy', false).warmStartFile, '/etc/mvproxy/state/warm.json');
  });

  it('the sync record defaults to kube-system/mvproxy-sidecars and the replica name to the host name', () => {
    const config = parseServeConfig(valid, '/etc/mvproxy', false);
    assert.deepEqual(config.syncRecord, { namespace: 'kube-system', name: 'mvproxy-sidecars' });
    assert.equal(config.replicaName, hostname());
  });

  it('the sync record may not be the drain record, whose keys would read as drains', () => {
    const problems = problemsOf({ ...valid, drainRecord: 'ops/records', syncRecord: 'ops/records' });
    assert.ok(problems.some((p) => /syncRecord: must not be the drainRecord/.test(p)));
  });

  it('a sync record that is not NAMESPACE/NAME and an empty replica name are reported', () => {
    const problems = problemsOf({ ...valid, syncRecord: 'just-a-name', replicaName: '' });
    assert.ok(problems.some((p) => /^syncRecord: "just-a-name" is not NAMESPACE\/NAME/.test(p)));
    assert.ok(problems.some((p) => /^replicaName: must be/.test(p)));
  });

  it('a contradiction between keys is reported with the problems of other keys', () => {
    const problems = problemsOf({ ...valid, drainRecord: 'ops/records', syncRecord: 'ops/records', peerEgressProxy: 'no-port', departedGraceSeconds: 1 });
    for (const field of ['syncRecord', 'peerEgressProxy', 'departedGraceSeconds'])
      assert.ok(
        problems.some((p) => p.startsWith(`${field}: `)),
        `expected a problem about ${field} in ${JSON.stringify(problems)}`,
      );
  });

  it('a section of another type, and a file that is not an object, say so', () => {
    assert.ok(problemsOf({ ...valid, tls: 'ca.crt' }).includes('tls: must be an object'));
    assert.ok(problemsOf({ ...valid, apiservers: {} }).includes('apiservers: must be a list'));
    assert.deepEqual(problemsOf([]), ['the file must hold a JSON object']);
  });

  it('the old admin.drainFile is refused, saying where drains live now', () => {
    assert.ok(
      problemsOf({ ...valid, admin: { socket: 'admin.sock', drainFile: 'drains.json' } }).some((p) =>
        /^admin\.drainFile: drains now live in the Kubernetes API/.test(p),
      ),
    );
  });

  it('an admin section with neither listen nor socket is reported', () => {
    assert.ok(problemsOf({ ...valid, admin: {} }).some((p) => p.startsWith('admin: set listen') && p.includes('socket')));
  });

  it('referenced files must exist when checked', () => {
    assert.throws(() => parseServeConfig(valid, '/nonexistent', true), /does not exist/);
  });

  describe('every number has a range, and a value outside it names its field', () => {
    for (const [field, [min, max, fallback]] of Object.entries(LIMITS)) {
      const [setting, factor] = SETTING_OF[field as keyof typeof LIMITS];
      it(`${field}: ${min} to ${max}, default ${fallback}, read as ${setting}`, () => {
        assert.equal(parseServeConfig(valid, '/etc/mvproxy', false)[setting], fallback * factor);
        assert.equal(parseServeConfig({ ...valid, [field]: min }, '/etc/mvproxy', false)[setting], min * factor);
        assert.equal(parseServeConfig({ ...valid, [field]: max }, '/etc/mvproxy', false)[setting], max * factor);
        for (const bad of [min - 1, max + 1, min + 0.5, -1, String(min), null, true]) {
          const problems = problemsOf({ ...valid, [field]: bad });
          assert.deepEqual(problems, [`${field}: must be an integer from ${min} to ${max}, got ${JSON.stringify(bad)}`], `${field} = ${JSON.stringify(bad)}`);
        }
      });
    }

    it('discoveryPollMillis 0 (a poll loop that would spin) is refused', () => {
      assert.ok(problemsOf({ ...valid, discoveryPollMillis: 0 }).some((p) => p.startsWith('discoveryPollMillis: must be an integer from 100 to 60000')));
    });

    it('every port is from 1 to 65535, naming its field', () => {
      const a = { ...valid.apiservers[0], address: '10.0.0.1:0', sidecar: { ...valid.apiservers[0]?.sidecar, listen: '10.0.0.1:65536' } };
      const problems = problemsOf({
        ...valid,
        apiservers: [a],
        xds: { tcp: { listen: '10.0.0.1:0', cert: 'x.crt', key: 'x.key', clientCa: 'ca.crt' } },
        admin: { listen: '127.0.0.1:99999' },
        peerEgressProxy: 'proxy:0',
      });
      for (const field of ['apiservers[0].address', 'apiservers[0].sidecar.listen', 'xds.tcp.listen', 'admin.listen', 'peerEgressProxy']) {
        assert.ok(
          problems.some((p) => p.startsWith(`${field}: `) && p.includes('port from 1 to 65535')),
          `expected a port problem about ${field} in ${JSON.stringify(problems)}`,
        );
      }
    });

    it('all out-of-range values are reported at once, with the other problems', () => {
      const problems = problemsOf({
        ...valid,
        kubeconfig: undefined,
        departedGraceSeconds: 0,
        localOnlyGraceSeconds: 1e9,
        discoveryPollMillis: 0,
        discoveryMaxBodyBytes: 10,
      });
      for (const field of ['kubeconfig', 'departedGraceSeconds', 'localOnlyGraceSeconds', 'discoveryPollMillis', 'discoveryMaxBodyBytes']) {
        assert.ok(
          problems.some((p) => p.startsWith(`${field}: `)),
          `expected a problem about ${field} in ${JSON.stringify(problems)}`,
        );
      }
    });
  });

  describe('the xDS socket mode', () => {
    it('is owner-only by default', () => {
      assert.equal(parseServeConfig(valid, '/etc/mvproxy', false).xds.unixSocketMode, 0o600);
    });

    it('may let our group in (0660), never others', () => {
      assert.equal(parseServeConfig({ ...valid, xds: { unixSocket: 'x.sock', unixSocketMode: '0660' } }, '/etc/mvproxy', false).xds.unixSocketMode, 0o660);
      for (const mode of ['0666', '0777', '600', 'rw', 384]) {
        assert.ok(
          problemsOf({ ...valid, xds: { unixSocket: 'x.sock', unixSocketMode: mode } }).some((p) => p.startsWith('xds.unixSocketMode: ')),
          JSON.stringify(mode),
        );
      }
    });
  });

  describe('admin.listen stays on loopback unless told otherwise', () => {
    for (const listen of ['127.0.0.1:9464', '127.1.2.3:9464', '[::1]:9464', 'localhost:9464', '[::ffff:127.0.0.1]:9464']) {
      it(`${listen} is accepted`, () => {
        assert.deepEqual(problemsOf({ ...valid, admin: { listen } }), []);
      });
    }

    for (const listen of ['0.0.0.0:9464', '10.0.0.11:9464', '[::]:9464', '[2001:db8::1]:9464', 'metrics.example.com:9464']) {
      it(`${listen} is refused, naming admin.listen and admin.allowRemote`, () => {
        const problems = problemsOf({ ...valid, admin: { listen } });
        assert.equal(problems.length, 1, JSON.stringify(problems));
        assert.match(problems[0] ?? '', /^admin\.listen: .* is not a loopback address; .*admin\.allowRemote: true/);
      });

      it(`${listen} is accepted with admin.allowRemote: true`, () => {
        assert.deepEqual(problemsOf({ ...valid, admin: { listen, allowRemote: true } }), []);
      });
    }

    it('admin.allowRemote must be a boolean', () => {
      assert.ok(problemsOf({ ...valid, admin: { listen: '127.0.0.1:9464', allowRemote: 'yes' } }).some((p) => p.startsWith('admin.allowRemote: ')));
    });

    it('isLoopback knows no name but localhost', () => {
      assert.equal(isLoopback('localhost'), true);
      assert.equal(isLoopback('localhost.example.com'), false);
      assert.equal(isLoopback('127.0.0.1.nip.io'), false);
    });
  });
});
