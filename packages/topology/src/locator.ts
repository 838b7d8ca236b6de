// Locators: the string identity of a topology node, as Kuadrant's policy-machinery writes them.
//   <lower(kind)>[.<group>]:<namespace>/<name>[#<section>]     namespaced
//   <lower(kind)>[.<group>]:<name>[#<section>]                 cluster-scoped
// Core kinds have no group: `service:ns/web`. A section is named by its object's kind and locator:
// a Gateway's listener `gateway.gateway.networking.k8s.io:ns/gw#http`, a route's rule
// `httproute.gateway.networking.k8s.io:ns/r#rule-1`, a Service's port `service:ns/web#http`, which is
// also what a policy's targetRef with sectionName names.

/** What a locator names. */
export interface LocatorParts {
  /** The object's kind (for a section too: "Gateway" for a listener). */
  kind: string
  /** API group ("" for core). */
  group: string
  namespace?: string
  name: string
  section?: string
}

/** The locator of a kind's object (and section). */
export function locator(p: LocatorParts): string {
  const k = p.group ? `${p.kind.toLowerCase()}.${p.group}` : p.kind.toLowerCase()
  return `${k}:${p.namespace ? `${p.namespace}/` : ''}${p.name}${p.section ? `#${p.section}` : ''}`
}

/** The locator without its section (the object a section belongs to). */
export function withoutSection(loc: string): string {
  const i = loc.indexOf('#')
  return i < 0 ? loc : loc.slice(0, i)
}

/** The API group of an apiVersion ("v1" → "", "gateway.networking.k8s.io/v1" → that group). */
export function groupOfApiVersion(apiVersion: string | undefined): string {
  if (!apiVersion) return ''
  const i = apiVersion.indexOf('/')
  return i < 0 ? '' : apiVersion.slice(0, i)
}

/** The locator of a Kubernetes object (and a section of it). */
export function locatorOf(
  obj: { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } },
  section?: string,
): string {
  return locator({
    kind: obj.kind ?? '',
    group: groupOfApiVersion(obj.apiVersion),
    name: obj.metadata?.name ?? '',
    ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
    ...(section ? { section } : {}),
  })
}
