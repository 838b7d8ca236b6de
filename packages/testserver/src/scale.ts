// The `/scale` subresource: an autoscaling/v1 Scale view of an object's replicas (Deployments,
// StatefulSets, ReplicaSets, custom kinds whose CRD declares subresources.scale). Reading it reads
// the object; writing it changes only the replicas field, through the object's own update path
// (admission, resourceVersion precondition, generation bump, watch event).
import type { ResourceType } from './resources.ts'
import type { Objects } from './objects.ts'
import type { Written } from './write-rules.ts'
import { badRequest } from './status.ts'
import { mergePatch, jsonPatch, type PatchKind } from './patch.ts'
import { labelSelectorString } from './selectors.ts'

const get = (o: any, path: string): any =>
  path
    .replace(/^\./, '')
    .split('.')
    .reduce((v, k) => v?.[k], o)
function set(o: any, path: string, value: unknown): any {
  const [k, ...rest] = path.replace(/^\./, '').split('.')
  return { ...o, [k!]: rest.length ? set(o?.[k!] ?? {}, rest.join('.'), value) : value }
}

export function scaleOf(t: ResourceType, obj: any): any {
  const p = t.scalePaths
  const m = obj.metadata
  const selector = get(obj, p.selector ?? '')
  const status: Record<string, unknown> = { replicas: get(obj, p.statusReplicas) ?? 0 }
  if (t.builtin) {
    if (obj.spec?.selector) status.selector = labelSelectorString(obj.spec.selector)
  } else if (typeof selector === 'string') status.selector = selector
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: get(obj, p.specReplicas) ?? 0 },
    status,
  }
}

/** PUT or PATCH of /scale: the new replicas written to the object; answers the new Scale. */
export async function writeScale(
  objects: Objects,
  t: ResourceType,
  ns: string,
  name: string,
  body: any,
  patchKind: PatchKind | 'put',
  opts: { manager: string; dryRun: boolean },
): Promise<Written> {
  const cur = await objects.get(t, ns, name)
  let scale = scaleOf(t, cur)
  if (patchKind === 'put') scale = body
  else if (patchKind === 'json') scale = jsonPatch(scale, body)
  else if (patchKind === 'merge' || patchKind === 'strategic') scale = mergePatch(scale, body)
  else throw badRequest('apply patches are not supported on /scale by this server')
  const replicas = scale?.spec?.replicas
  if (!Number.isInteger(replicas) || replicas < 0)
    throw badRequest(`Scale in version "v1" cannot be handled as a Scale: spec.replicas must be a non-negative integer`)
  const rv = scale.metadata?.resourceVersion
  let next = set(cur, t.scalePaths.specReplicas, replicas)
  next = { ...next, metadata: { ...next.metadata, ...(rv ? { resourceVersion: rv } : {}) } }
  const w = await objects.update(t, ns, name, next, { manager: opts.manager, dryRun: opts.dryRun })
  return { object: scaleOf(t, w.object), warnings: w.warnings }
}
