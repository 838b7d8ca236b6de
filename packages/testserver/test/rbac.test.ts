// RBAC in the test server (rbac: true): the authorizer's decisions follow kube-apiserver's RBAC
// authorizer (plugin/pkg/auth/authorizer/rbac/rbac_test.go: TestAuthorizer's cases and TestRuleMatches'
// star, tuple and subresource expansions, ported as tables), and over HTTP: a ServiceAccount's
// kubeconfig gets what its bindings allow and kube-apiserver's 403 for the rest; the admin token is
// system:masters; an unknown token is 401.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Cluster } from '@statewright/k8s'
import { startTestServer } from '@statewright/testserver'
import { rbacAllows, type Attributes, type RbacStore, type UserInfo } from '../src/rbac.ts'

const rule = (verbs: string, apiGroups: string, resources: string, nonResourceURLs = '') => ({
  verbs: verbs.split(','),
  apiGroups: apiGroups.split(','),
  resources: resources.split(','),
  ...(nonResourceURLs ? { nonResourceURLs: nonResourceURLs.split(',') } : {}),
})
const subjects = (...s: string[]) =>
  s.map((x) => {
    const [kind, name] = x.split(':') as [string, string]
    return { kind, name }
  })
function storeOf(o: { clusterRoles?: any[]; roleBindings?: any[]; clusterRoleBindings?: any[]; roles?: any[] }): RbacStore {
  return {
    clusterRoleBindings: () => o.clusterRoleBindings ?? [],
    roleBindings: (ns) => (o.roleBindings ?? []).filter((b) => b.metadata.namespace === ns),
    clusterRole: (name) => (o.clusterRoles ?? []).find((r) => r.metadata.name === name),
    role: (ns, name) => (o.roles ?? []).find((r) => r.metadata.namespace === ns && r.metadata.name === name),
  }
}
const res = (
  user: string,
  groups: string,
  verb: string,
  resource: string,
  subresource: string,
  namespace: string,
  group = '',
): [UserInfo, Attributes] => [
  { name: user, groups: groups ? groups.split(',') : [] },
  { verb, resourceRequest: true, path: '', group, resource, subresource, namespace, name: '' },
]
const url = (user: string, groups: string[], verb: string, path: string): [UserInfo, Attributes] => [
  { name: user, groups },
  { verb, resourceRequest: false, path, group: '', resource: '', subresource: '', namespace: '', name: '' },
]

test('TestAuthorizer case 0: a RoleBinding to a ClusterRole grants in its namespace only, to its users and groups', () => {
  const store = storeOf({
    clusterRoles: [{ metadata: { name: 'admin' }, rules: [rule('*', '*', '*', '*')] }],
    roleBindings: [
      { metadata: { namespace: 'ns1' }, roleRef: { kind: 'ClusterRole', name: 'admin' }, subjects: subjects('User:admin', 'Group:admins') },
    ],
  })
  for (const c of [
    res('admin', '', 'get', 'Pods', '', 'ns1'),
    res('admin', '', 'watch', 'Pods', '', 'ns1'),
    res('admin', 'group1', 'watch', 'Foobar', '', 'ns1'),
    res('joe', 'admins', 'watch', 'Foobar', '', 'ns1'),
    res('joe', 'group1,admins', 'watch', 'Foobar', '', 'ns1'),
  ])
    assert.ok(rbacAllows(store, ...c), JSON.stringify(c))
  for (const c of [
    res('admin', '', 'GET', 'Pods', '', 'ns2'),
    res('admin', '', 'GET', 'Nodes', '', ''),
    res('admin', 'admins', 'GET', 'Pods', '', 'ns2'),
    res('admin', 'admins', 'GET', 'Nodes', '', ''),
  ])
    assert.not.ok(rbacAllows(store, ...c), JSON.stringify(c))
})

test('TestAuthorizer case 1: non-resource URLs, exact and with a trailing *', () => {
  const store = storeOf({
    clusterRoles: [
      { metadata: { name: 'non-resource-url-getter' }, rules: [rule('get', '', '', '/apis')] },
      { metadata: { name: 'non-resource-url' }, rules: [rule('*', '', '', '/apis')] },
      { metadata: { name: 'non-resource-url-prefix' }, rules: [rule('get', '', '', '/apis/*')] },
    ],
    clusterRoleBindings: [
      { metadata: {}, roleRef: { kind: 'ClusterRole', name: 'non-resource-url-getter' }, subjects: subjects('User:foo', 'Group:bar') },
      { metadata: {}, roleRef: { kind: 'ClusterRole', name: 'non-resource-url' }, subjects: subjects('User:admin', 'Group:admin') },
      {
        metadata: {},
        roleRef: { kind: 'ClusterRole', name: 'non-resource-url-prefix' },
        subjects: subjects('User:prefixed', 'Group:prefixed'),
      },
    ],
  })
  for (const c of [
    url('foo', [], 'get', '/apis'),
    url('', ['bar'], 'get', '/apis'),
    url('admin', [], 'get', '/apis'),
    url('', ['admin'], 'get', '/apis'),
    url('admin', [], 'watch', '/apis'),
    url('', ['admin'], 'watch', '/apis'),
    url('prefixed', [], 'get', '/apis/v1'),
    url('', ['prefixed'], 'get', '/apis/v1'),
    url('prefixed', [], 'get', '/apis/v1/foobar'),
  ])
    assert.ok(rbacAllows(store, ...c), JSON.stringify(c))
  for (const c of [
    url('foo', [], 'watch', '/apis'),
    url('', ['bar'], 'watch', '/apis'),
    url('foo', [], 'get', '/api/v1'),
    url('admin', [], 'get', '/api/v1'),
    url('prefixed', [], 'get', '/api/v1'),
  ])
    assert.not.ok(rbacAllows(store, ...c), JSON.stringify(c))
})

test('TestAuthorizer cases 2-3 and TestRuleMatches: subresources are their own resource; "*/status"; star and tuple expansion', () => {
  const bind = (rules: any[]) =>
    storeOf({
      clusterRoles: [{ metadata: { name: 'r' }, rules }],
      roleBindings: [{ metadata: { namespace: 'ns1' }, roleRef: { kind: 'ClusterRole', name: 'r' }, subjects: subjects('User:admin') }],
    })
  const pods = bind([rule('*', '*', 'pods')])
  assert.ok(rbacAllows(pods, ...res('admin', '', 'get', 'pods', '', 'ns1')))
  assert.not.ok(rbacAllows(pods, ...res('admin', '', 'get', 'pods', 'status', 'ns1')))
  const status = bind([rule('*', '*', 'pods/status')])
  assert.ok(rbacAllows(status, ...res('admin', '', 'get', 'pods', 'status', 'ns1')))
  assert.not.ok(rbacAllows(status, ...res('admin', '', 'get', 'pods', '', 'ns1')))
  const anyStatus = bind([rule('patch', 'g', '*/status')])
  assert.ok(rbacAllows(anyStatus, ...res('admin', '', 'patch', 'gadgets', 'status', 'ns1', 'g')))
  assert.not.ok(rbacAllows(anyStatus, ...res('admin', '', 'patch', 'gadgets', '', 'ns1', 'g')))
  const tuple = bind([rule('verb1,verb2', 'group1,group2', 'resource1,resource2')])
  for (const v of ['verb1', 'verb2'])
    for (const g of ['group1', 'group2'])
      for (const r of ['resource1', 'resource2']) assert.ok(rbacAllows(tuple, ...res('admin', '', v, r, '', 'ns1', g)))
  assert.not.ok(rbacAllows(tuple, ...res('admin', '', 'verb3', 'resource1', '', 'ns1', 'group1')))
  const named = bind([{ ...rule('get,update', '', 'configmaps'), resourceNames: ['one'] }])
  const one = res('admin', '', 'get', 'configmaps', '', 'ns1')
  one[1].name = 'one'
  assert.ok(rbacAllows(named, ...one))
  assert.not.ok(rbacAllows(named, ...res('admin', '', 'list', 'configmaps', '', 'ns1')), 'resourceNames never allow a list')
})

test('over HTTP: a ServiceAccount gets what its Role allows and a 403 in kube-apiserver words for the rest', async () => {
  const server = await startTestServer({ rbac: true })
  const admin = new Cluster({ kubeconfig: server.kubeconfig, qps: 0 })
  const sa = new Cluster({ kubeconfig: server.control.kubeconfigFor('team', 'bot'), qps: 0 })
  try {
    await server.control.grant([
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'bot', namespace: 'team' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'cm-reader', namespace: 'team' },
        rules: [rule('get,list,watch', '', 'configmaps')],
      } as any,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'bot-reads', namespace: 'team' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'bot', namespace: 'team' }],
      } as any,
    ])
    await admin.request({ method: 'POST', path: '/api/v1/namespaces/team/configmaps', body: { metadata: { name: 'a' }, data: { x: '1' } } })
    const got: any = await sa.request({ path: '/api/v1/namespaces/team/configmaps/a' })
    assert.is(got.data.x, '1')
    const list: any = await sa.request({ path: '/api/v1/namespaces/team/configmaps' })
    assert.is(list.items.length >= 1, true)
    const refused = async (p: Promise<unknown>) =>
      p.then(
        () => assert.unreachable('allowed'),
        (e: any) => e,
      )
    const e1 = await refused(sa.request({ method: 'POST', path: '/api/v1/namespaces/team/configmaps', body: { metadata: { name: 'b' } } }))
    assert.is(e1.code, 403)
    assert.is(
      e1.message.includes(
        'configmaps is forbidden: User "system:serviceaccount:team:bot" cannot create resource "configmaps" in API group "" in the namespace "team"',
      ),
      true,
      e1.message,
    )
    const e2 = await refused(sa.request({ path: '/api/v1/namespaces/other/configmaps/a' }))
    assert.is(e2.code, 403)
    assert.match(
      e2.message,
      'configmaps "a" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "configmaps" in API group "" in the namespace "other"',
    )
    const e3 = await refused(sa.request({ path: '/api/v1/nodes' }))
    assert.match(e3.message, 'cannot list resource "nodes" in API group "" at the cluster scope')
    // discovery is open to every authenticated user (system:discovery)
    assert.ok(await sa.request({ path: '/api' }))
    // an unknown token is 401
    const stranger = new Cluster({ kubeconfig: server.kubeconfig.replace(server.token!, 'nobody'), qps: 0 })
    const e4 = await refused(stranger.request({ path: '/api/v1/namespaces' }))
    assert.is(e4.code, 401)
    stranger.close()
    // the admin is system:masters
    assert.ok(await admin.request({ path: '/api/v1/nodes' }))
  } finally {
    sa.close()
    admin.close()
    await server.stop()
  }
})

test.run()
