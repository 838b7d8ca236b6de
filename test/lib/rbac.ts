// How RBAC sees a request of the test server's log: "<group>/<resource>[/<subresource>]/<verb>".
import type { RequestLogEntry } from '@statewright/testserver'

/** (group, resource[/subresource], verb) of a request, as RBAC sees it; undefined for discovery. */
export function rbacOf(e: RequestLogEntry): string | undefined {
  const segs = e.path.split('/').filter(Boolean)
  let group: string, rest: string[]
  if (segs[0] === 'api') {
    group = ''
    rest = segs.slice(2)
  } else if (segs[0] === 'apis') {
    group = segs[1]!
    rest = segs.slice(3)
  } else return undefined
  if (rest.length === 0) return undefined // discovery of a group-version
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2)
  const [resource, name, sub] = rest
  const verb =
    e.method === 'GET'
      ? name
        ? 'get'
        : e.watch || e.query.watch
          ? 'watch'
          : 'list'
      : e.method === 'POST'
        ? 'create'
        : e.method === 'PUT'
          ? 'update'
          : e.method === 'PATCH'
            ? 'patch'
            : e.method === 'DELETE'
              ? name
                ? 'delete'
                : 'deletecollection'
              : e.method.toLowerCase()
  return `${group}/${resource}${sub ? `/${sub}` : ''}/${verb}`
}
