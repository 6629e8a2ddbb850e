// parseRequestPath mirrors kube-apiserver's RequestInfoFactory.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { groupDocumentOf, parseRequestPath, type RequestInfo, sidecarPath } from '../../../src/model/requestInfo.js';

/** The routing-relevant fields only, so expectations read like the upstream table. */
function classify(path: string): Partial<RequestInfo> {
  const info = parseRequestPath(path);
  const picked: Partial<RequestInfo> = { isResourceRequest: info.isResourceRequest };
  for (const key of ['group', 'version', 'namespace', 'resource', 'name', 'subresource', 'specialVerb'] as const) {
    if (info[key] !== undefined && info[key] !== '') picked[key] = info[key];
  }
  return picked;
}

describe('parseRequestPath', () => {
  test('a core-group collection is a resource request in group ""', () => {
    assert.deepEqual(classify('/api/v1/pods'), { isResourceRequest: true, version: 'v1', resource: 'pods' });
  });

  test('a named group collection carries group and version', () => {
    assert.deepEqual(classify('/apis/batch/v1/jobs'), { isResourceRequest: true, group: 'batch', version: 'v1', resource: 'jobs' });
  });

  test('/api/v1/namespaces/foo/pods is pods in namespace foo', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/pods'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'pods',
    });
  });

  test('a namespaced object and its subresource', () => {
    assert.deepEqual(classify('/apis/apps/v1/namespaces/foo/deployments/web/scale'), {
      isResourceRequest: true,
      group: 'apps',
      version: 'v1',
      namespace: 'foo',
      resource: 'deployments',
      name: 'web',
      subresource: 'scale',
    });
  });

  test('parts after the subresource are not interpreted', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/services/web/proxy/some/path'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'services',
      name: 'web',
      subresource: 'proxy',
    });
  });

  test('/api/v1/namespaces is the namespaces collection', () => {
    assert.deepEqual(classify('/api/v1/namespaces'), { isResourceRequest: true, version: 'v1', resource: 'namespaces' });
  });

  test('/api/v1/namespaces/foo is the namespace foo, a namespaces object', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'namespaces',
      name: 'foo',
    });
  });

  test('/api/v1/namespaces/foo/status is the status subresource of namespaces', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/status'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'namespaces',
      name: 'foo',
      subresource: 'status',
    });
  });

  test('/api/v1/namespaces/foo/finalize is the finalize subresource of namespaces', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/finalize'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'namespaces',
      name: 'foo',
      subresource: 'finalize',
    });
  });

  test('an object named status inside a namespace belongs to its resource, not to namespaces', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/pods/status'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'pods',
      name: 'status',
    });
  });

  test('the legacy watch prefix sets the verb and parses the rest as usual', () => {
    assert.deepEqual(classify('/api/v1/watch/namespaces/foo/pods/p1'), {
      isResourceRequest: true,
      version: 'v1',
      specialVerb: 'watch',
      namespace: 'foo',
      resource: 'pods',
      name: 'p1',
    });
    assert.deepEqual(classify('/apis/batch/v1/watch/jobs'), {
      isResourceRequest: true,
      group: 'batch',
      version: 'v1',
      specialVerb: 'watch',
      resource: 'jobs',
    });
  });

  test('after the legacy proxy prefix the third part is not a subresource', () => {
    assert.deepEqual(classify('/api/v1/proxy/namespaces/foo/pods/p1/log'), {
      isResourceRequest: true,
      version: 'v1',
      specialVerb: 'proxy',
      namespace: 'foo',
      resource: 'pods',
      name: 'p1',
    });
  });

  test('a special verb with nothing after it is flagged, not classified', () => {
    const info = parseRequestPath('/api/v1/watch');
    assert.equal(info.isResourceRequest, false);
    assert.match(info.error ?? '', /unable to determine kind/);
  });

  test('trailing and leading slashes are trimmed as upstream does', () => {
    const expected = { isResourceRequest: true, version: 'v1', namespace: 'foo', resource: 'namespaces', name: 'foo' };
    assert.deepEqual(classify('/api/v1/namespaces/foo/'), expected);
    assert.deepEqual(classify('/api/v1/namespaces/foo//'), expected);
    assert.deepEqual(classify('//api/v1/namespaces/foo'), expected);
  });

  test('an inner empty segment counts as a part', () => {
    // namespaces//pods: namespace "" (none), resource pods.
    assert.deepEqual(classify('/api/v1/namespaces//pods'), { isResourceRequest: true, version: 'v1', resource: 'pods' });
    // pods//log: name "" (none), subresource log.
    assert.deepEqual(classify('/api/v1/pods//log'), { isResourceRequest: true, version: 'v1', resource: 'pods', subresource: 'log' });
  });

  test('the query string is ignored', () => {
    assert.deepEqual(classify('/api/v1/namespaces/foo/pods?watch=true&labelSelector=a%3Db'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'pods',
    });
  });

  test('namespace and name are decoded as the apiserver decodes them', () => {
    assert.deepEqual(classify('/api/v1/namespaces/f%6Fo/pods/a%3Ab'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'pods',
      name: 'a:b',
    });
  });

  test('the names a route is chosen by are read as spelled, as the route regexes read them', () => {
    // The apiserver reads pods/status here; no route matches an escaped name, so mvproxy does not either.
    assert.deepEqual(classify('/api/v1/namespaces/foo/p%6Fds/p/st%61tus'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'p%6Fds',
      name: 'p',
      subresource: 'st%61tus',
    });
    assert.deepEqual(classify('/%61pis/batch/v1/jobs'), { isResourceRequest: false });
    assert.deepEqual(classify('/api/v1/%77atch/pods'), { isResourceRequest: true, version: 'v1', resource: '%77atch', name: 'pods' });
  });

  test('an encoded slash separates segments, as in the path the apiserver decodes before splitting it', () => {
    assert.deepEqual(classify('/apis/batch/v1/namespaces/x%2Fcronjobs/jobs'), {
      isResourceRequest: true,
      group: 'batch',
      version: 'v1',
      namespace: 'x',
      resource: 'cronjobs',
      name: 'jobs',
    });
    assert.deepEqual(classify('/apis/storagemigration.k8s.io/v1%2fstorageversionmigrations'), {
      isResourceRequest: true,
      group: 'storagemigration.k8s.io',
      version: 'v1',
      resource: 'storageversionmigrations',
    });
    assert.deepEqual(classify('/%2Fapi/v1/pods%2F'), { isResourceRequest: true, version: 'v1', resource: 'pods' });
    assert.deepEqual(classify('/api/v1/pods%2F%2Flog'), { isResourceRequest: true, version: 'v1', resource: 'pods', subresource: 'log' });
  });

  test('an encoded backslash is part of its segment, as a raw one is', () => {
    const expected = { isResourceRequest: true, group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', name: 'a\\b' };
    assert.deepEqual(classify('/apis/rbac.authorization.k8s.io/v1/clusterroles/a%5Cb'), expected);
    assert.deepEqual(classify('/apis/rbac.authorization.k8s.io/v1/clusterroles/a%5cb'), expected);
    assert.deepEqual(classify('/apis/rbac.authorization.k8s.io/v1/clusterroles/a\\b'), expected);
  });

  test('dot segments are ordinary segments: the apiserver removes none', () => {
    assert.deepEqual(classify('/apis/batch/v1/jobs/../cronjobs'), {
      isResourceRequest: true,
      group: 'batch',
      version: 'v1',
      resource: 'jobs',
      name: '..',
      subresource: 'cronjobs',
    });
    assert.deepEqual(classify('/api/v1/namespaces/foo/pods/%2E%2E'), {
      isResourceRequest: true,
      version: 'v1',
      namespace: 'foo',
      resource: 'pods',
      name: '..',
    });
    assert.deepEqual(classify('/api/v1/./pods'), { isResourceRequest: true, version: 'v1', resource: '.', name: 'pods' });
  });

  test('a malformed escape is flagged and treated as a non-resource request', () => {
    for (const path of ['/api/v1/pods/a%zz', '/api/v1/pods/%', '/apis/batch/v1/jobs%2', '/api/v1/pods/%2%2F']) {
      const info = parseRequestPath(path);
      assert.equal(info.isResourceRequest, false, path);
      assert.match(info.error ?? '', /malformed percent-encoding/, path);
    }
  });

  test('discovery and other non-resource paths are not resource requests', () => {
    for (const path of [
      '/',
      '/api',
      '/api/',
      '/api/v1',
      '/apis',
      '/apis/apps',
      '/apis/apps/v1',
      '/apis/apps/v1/',
      '/healthz',
      '/livez/etcd',
      '/readyz',
      '/version',
      '/metrics',
      '/openapi/v2',
      '/openapi/v3/apis/apps/v1',
      '/.well-known/openid-configuration',
      '/logs/kube-apiserver.log',
    ]) {
      const info = parseRequestPath(path);
      assert.equal(info.isResourceRequest, false, path);
      assert.equal(info.error, undefined, path);
    }
  });

  test('never throws, whatever the input', () => {
    for (const path of ['', '%', '/%E0%A4%A', '/api/v1/pods/%C3%28', '?', '#x', '/apis/a/b/c/%ff%fe']) {
      assert.doesNotThrow(() => parseRequestPath(path), path);
    }
  });
});

describe('groupDocumentOf', () => {
  test('discovery documents of a group or a group-version', () => {
    assert.deepEqual(groupDocumentOf('/apis/batch'), { group: 'batch' });
    assert.deepEqual(groupDocumentOf('/apis/batch/v1/?x=1'), { group: 'batch', version: 'v1' });
    assert.deepEqual(groupDocumentOf('/api/v1'), { group: '', version: 'v1' });
  });

  test("a group-version's OpenAPI v3 document, named by its index key, one trailing slash allowed", () => {
    assert.deepEqual(groupDocumentOf('/openapi/v3/apis/batch/v1'), { group: 'batch', version: 'v1' });
    assert.deepEqual(groupDocumentOf('/openapi/v3/apis/batch/v1/?hash=A'), { group: 'batch', version: 'v1' });
    assert.deepEqual(groupDocumentOf('/openapi/v3/api/v1'), { group: '', version: 'v1' });
    assert.deepEqual(groupDocumentOf('/openapi/v3/apis%2Fbatch%2Fv1'), { group: 'batch', version: 'v1' });
  });

  test('other OpenAPI paths name no document', () => {
    for (const path of [
      '/openapi/v3',
      '/openapi/v3/',
      '/openapi/v3/apis/batch',
      '/openapi/v3/version',
      '/openapi/v3/apis/batch/v1//',
      '/openapi/v3//api/v1',
      '/openapi/v3/apis//v1',
    ]) {
      assert.equal(groupDocumentOf(path), undefined, path);
    }
  });
});

describe('sidecarPath', () => {
  test('decodes encoded slashes and backslashes, either case, in the path only', () => {
    assert.equal(sidecarPath('/a%2Fb%2fc%5Cd%5ce?x=%2F%5C#y%2F'), '/a/b/c\\d\\e?x=%2F%5C#y%2F');
  });

  test('changes nothing else: no dot segment removed, no slash merged, no other escape decoded, no backslash turned', () => {
    for (const path of ['/a/./b/../c', '//a//b//', '/a/%2E%2E/%61%7E%25%3A', '/a\\b', '/a/%252F', '/a/%zz']) assert.equal(sidecarPath(path), path);
  });

  test('decodes in one pass, as Envoy does, so it is idempotent', () => {
    for (const path of ['/a/%252F', '/a/%%2F2F', '/a/%2%2FF', '/a/%2F%2F%2F', '/%2F%5C%2f']) {
      assert.equal(sidecarPath(sidecarPath(path)), sidecarPath(path), path);
    }
    assert.equal(sidecarPath('/a/%%2F2F'), '/a/%/2F');
  });
});
