// RBAC, opt-in (`rbac: true`): who a request is (authentication) and whether its Roles allow it
// (authorization), as kube-apiserver's token authenticator and RBAC authorizer decide.
// Invariants:
// - The server's own token is the admin: user "system:admin" in "system:masters", allowed everything.
//   A ServiceAccount's token (serviceAccountToken) is "system:serviceaccount:<ns>:<name>" in the
//   groups system:serviceaccounts, system:serviceaccounts:<ns> and system:authenticated. Any other
//   token is 401.
// - A request is allowed when a ClusterRoleBinding, or a RoleBinding in the request's namespace,
//   names the user (User, Group, ServiceAccount subjects) and its role (a ClusterRole, or a Role of
//   the binding's namespace) has a rule that covers it (rbac/v1 helpers' VerbMatches, APIGroupMatches,
//   ResourceMatches with "*" and "*/<subresource>", ResourceNameMatches; NonResourceURLMatches with a
//   trailing "*"). Discovery, OpenAPI, /version and the health paths are allowed to every
//   authenticated user (the bootstrap roles system:discovery and system:public-info-viewer).
// - A refusal is kube-apiserver's 403: `<resource>[.<group>] ["<name>"] is forbidden: User "<user>"
//   cannot <verb> resource "<resource>[/<subresource>]" in API group "<group>" in the namespace
//   "<ns>"` (or "at the cluster scope"; `forbidden: User ... cannot <verb> path "<path>"`).
// - Not modelled: aggregated ClusterRoles (aggregationRule), impersonation, escalate/bind checks on
//   writes of Roles, and the default roles beyond discovery (docs/testserver.md says so).
import { randomBytes } from 'node:crypto'
import type { Route } from './routes.ts'
import { StatusError } from './status.ts'

export interface UserInfo {
  readonly name: string
  readonly groups: readonly string[]
}

/** What the authorizer reads of the stored RBAC objects. */
export interface RbacStore {
  clusterRoleBindings(): Iterable<any>
  roleBindings(namespace: string): Iterable<any>
  clusterRole(name: string): any
  role(namespace: string, name: string): any
}

/** What a request asks, as kube-apiserver's authorizer.Attributes (a resource request or a path). */
export interface Attributes {
  verb: string
  resourceRequest: boolean
  path: string
  group: string
  resource: string
  subresource: string
  namespace: string
  name: string
}

export const ADMIN: UserInfo = { name: 'system:admin', groups: ['system:masters', 'system:authenticated'] }

export class Rbac {
  private readonly tokens = new Map<string, UserInfo>()

  constructor(private readonly store: RbacStore) {}

  /** A bearer token that authenticates as the ServiceAccount (made once per account). */
  serviceAccountToken(namespace: string, name: string): string {
    const user = `system:serviceaccount:${namespace}:${name}`
    for (const [token, u] of this.tokens) if (u.name === user) return token
    const token = `sa-${randomBytes(18).toString('base64url')}`
    this.tokens.set(token, {
      name: user,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    })
    return token
  }

  /** The user a token stands for (undefined: not authenticated). */
  userOf(token: string | undefined, adminToken: string | null): UserInfo | undefined {
    if (token !== undefined && token === adminToken) return ADMIN
    return token === undefined ? undefined : this.tokens.get(token)
  }

  /** undefined when allowed, else the 403 to answer. */
  authorize(
    user: UserInfo,
    method: string,
    path: string,
    route: Route,
    query: Record<string, string>,
    watch: boolean,
  ): StatusError | undefined {
    if (user.groups.includes('system:masters')) return undefined
    const a = attributesOf(method, path, route, query, watch)
    if (!a.resourceRequest && route.kind !== 'unknown') return undefined // discovery, openapi, version, health
    if (rbacAllows(this.store, user, a)) return undefined
    return forbidden(user, a)
  }
}

/** Whether a binding of the store gives the user a rule that covers the request (the RBAC authorizer's decision). */
export function rbacAllows(store: RbacStore, user: UserInfo, a: Attributes): boolean {
  const rulesOf = (role: any) => (Array.isArray(role?.rules) ? role.rules : [])
  const names = (b: any, defaultNs: string | undefined) =>
    Array.isArray(b?.subjects) && b.subjects.some((s: any) => subjectMatches(s, user, defaultNs))
  for (const b of store.clusterRoleBindings()) {
    if (!names(b, undefined) || b.roleRef?.kind !== 'ClusterRole') continue
    if (rulesOf(store.clusterRole(b.roleRef.name)).some((r: any) => ruleAllows(r, a))) return true
  }
  if (a.resourceRequest && a.namespace) {
    for (const b of store.roleBindings(a.namespace)) {
      if (!names(b, a.namespace)) continue
      const role = b.roleRef?.kind === 'ClusterRole' ? store.clusterRole(b.roleRef.name) : store.role(a.namespace, b.roleRef?.name ?? '')
      if (rulesOf(role).some((r: any) => ruleAllows(r, a))) return true
    }
  }
  return false
}

function attributesOf(method: string, path: string, route: Route, q: Record<string, string>, watch: boolean): Attributes {
  const base = { path, group: '', resource: '', subresource: '', namespace: '', name: '' }
  if (route.kind !== 'object') return { ...base, verb: method === 'GET' ? 'get' : method.toLowerCase(), resourceRequest: false }
  const named = route.name !== undefined
  const verb =
    method === 'GET'
      ? watch
        ? 'watch'
        : named
          ? 'get'
          : 'list'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : method === 'DELETE'
              ? named
                ? 'delete'
                : 'deletecollection'
              : method.toLowerCase()
  // a watch of one object (fieldSelector metadata.name=x) is checked against that name, as kube-apiserver does
  const watchedName =
    !named && (verb === 'watch' || verb === 'list') ? /^metadata\.name=([^,]+)$/.exec(q.fieldSelector ?? '')?.[1] : undefined
  return {
    ...base,
    verb,
    resourceRequest: true,
    group: route.type.group ?? '',
    resource: route.type.resource,
    subresource: route.subresource ?? '',
    namespace: route.namespace ?? '',
    name: route.name ?? watchedName ?? '',
  }
}

function subjectMatches(s: any, user: UserInfo, defaultNs: string | undefined): boolean {
  if (s?.kind === 'User') return s.name === user.name
  if (s?.kind === 'Group') return user.groups.includes(s.name)
  if (s?.kind === 'ServiceAccount') {
    const ns = s.namespace || defaultNs
    return !!ns && user.name === `system:serviceaccount:${ns}:${s.name}`
  }
  return false
}

function ruleAllows(r: any, a: Attributes): boolean {
  const has = (list: unknown, v: string) => Array.isArray(list) && (list.includes('*') || list.includes(v))
  if (!has(r?.verbs, a.verb)) return false
  if (!a.resourceRequest) {
    const urls: unknown[] = Array.isArray(r.nonResourceURLs) ? r.nonResourceURLs : []
    return urls.some((u) => typeof u === 'string' && (u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.slice(0, -1)))))
  }
  if (!has(r.apiGroups, a.group)) return false
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  const resources: unknown[] = Array.isArray(r.resources) ? r.resources : []
  const resourceOk = resources.some((x) => x === '*' || x === combined || (a.subresource !== '' && x === `*/${a.subresource}`))
  if (!resourceOk) return false
  const names: unknown[] = Array.isArray(r.resourceNames) ? r.resourceNames : []
  return names.length === 0 || (a.name !== '' && names.includes(a.name))
}

function forbidden(user: UserInfo, a: Attributes): StatusError {
  if (!a.resourceRequest) return new StatusError(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${a.verb} path "${a.path}"`)
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope'
  const why = `User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" ${where}`
  const qualified = a.group ? `${a.resource}.${a.group}` : a.resource
  const details: { kind: string; group?: string; name?: string } = { kind: a.resource }
  if (a.group) details.group = a.group
  if (a.name) details.name = a.name
  return new StatusError(403, 'Forbidden', `${qualified}${a.name ? ` "${a.name}"` : ''} is forbidden: ${why}`, details as never)
}
