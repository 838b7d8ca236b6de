// Namespaces: the checks writes into a namespace pass, and namespace deletion.
// Invariants (as kube-apiserver and the namespace controller):
// - a namespaced write needs its namespace to exist (404) and not be terminating (403);
// - deleting a namespace marks it Terminating; the namespace controller (a Lifecycle step, see
//   objects.ts) later deletes every namespaced object in it (finalizers and the garbage collector
//   apply as usual) and removes it once nothing is left in it.
import type { Store } from './store.ts'
import type { Registry, ResourceType } from './resources.ts'
import { StatusError, notFound } from './status.ts'

export const NS_TYPE_KEY = '/namespaces'
export const nowSeconds = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z')

export class Namespaces {
  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
  ) {}

  /** Throws unless a write of kind `t` may go into namespace `ns`. */
  check(t: ResourceType, ns: string): void {
    if (!t.namespaced) return
    const nsObj = this.store.get(NS_TYPE_KEY, '', ns)
    if (!nsObj) throw notFound({ resource: 'namespaces', group: '' }, ns)
    if (nsObj.metadata.deletionTimestamp) {
      throw new StatusError(
        403,
        'Forbidden',
        `${t.resource} "" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
        {
          kind: t.resource,
          causes: [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }],
        },
      )
    }
  }

  /** The first step of a namespace's deletion: it is Terminating (deletionTimestamp, phase). */
  markTerminating(t: ResourceType, cur: any): any {
    if (cur.metadata.deletionTimestamp) return cur
    const next = {
      ...cur,
      metadata: { ...cur.metadata, deletionTimestamp: nowSeconds(), deletionGracePeriodSeconds: 0 },
      status: { ...(cur.status ?? {}), phase: 'Terminating' },
    }
    const [ns] = this.store.write(t.storageKey, (put) => put(next))
    return ns
  }

  /**
   * The namespace controller's work: deletes every namespaced object in a Terminating namespace with
   * `del` (finalizers and the garbage collector apply as usual) and removes it once empty.
   */
  empty(name: string, del: (rt: ResourceType, ns: string, name: string) => void): void {
    const ns = this.store.get(NS_TYPE_KEY, '', name)
    if (!ns?.metadata.deletionTimestamp) return
    for (const rt of this.namespacedStorage()) {
      for (const [, obj] of this.store.scan(rt.storageKey, name, undefined, this.store.snapshot())) {
        // the garbage collector may have removed it already, as a dependent of an earlier one
        if (!obj.metadata.deletionTimestamp)
          try {
            del(rt, name, obj.metadata.name)
          } catch (e) {
            if (!(e instanceof StatusError && e.code === 404)) throw e
          }
      }
    }
    this.finishIfEmpty(name)
  }

  /** Removes a terminating namespace once nothing is left in it; returns the removed object. */
  finishIfEmpty(name: string): any {
    const ns = this.store.get(NS_TYPE_KEY, '', name)
    if (!ns?.metadata.deletionTimestamp) return undefined
    for (const rt of this.namespacedStorage()) {
      for (const _ of this.store.scan(rt.storageKey, name, undefined, this.store.snapshot())) return undefined
    }
    const [gone] = this.store.write(NS_TYPE_KEY, (_put, del) => del(ns))
    return gone
  }

  /** One resource type per storage (a kind served under two versions is stored once), namespaced only. */
  private namespacedStorage(): ResourceType[] {
    const seen = new Map<string, ResourceType>()
    for (const rt of this.registry.all()) if (rt.namespaced && !seen.has(rt.storageKey)) seen.set(rt.storageKey, rt)
    return [...seen.values()]
  }
}

const ROOT_CA_DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.'

/**
 * What the namespace's controllers create in a new namespace: the `default` ServiceAccount and the
 * `kube-root-ca.crt` ConfigMap with the cluster CA (at once here, a moment later on a real cluster).
 */
export function populateNamespace(
  registry: Registry,
  store: Store,
  ns: string,
  rootCaPem: string,
  create: (t: ResourceType, ns: string, body: any, o: { manager: string; admit: false }) => unknown,
): void {
  const o = { manager: 'kube-controller-manager', admit: false } as const
  const sa = registry.byKind('v1', 'ServiceAccount')
  const cmType = registry.byKind('v1', 'ConfigMap')
  if (sa && !store.get(sa.storageKey, ns, 'default')) create(sa, ns, { metadata: { name: 'default' } }, o)
  if (cmType && !store.get(cmType.storageKey, ns, 'kube-root-ca.crt'))
    create(
      cmType,
      ns,
      {
        metadata: { name: 'kube-root-ca.crt', annotations: { 'kubernetes.io/description': ROOT_CA_DESCRIPTION } },
        data: { 'ca.crt': rootCaPem },
      },
      o,
    )
}
