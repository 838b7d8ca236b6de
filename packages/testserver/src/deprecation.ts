// Deprecated API versions: a request to one is answered with a `Warning: 299 - "<text>"` header, as
// kube-apiserver answers it (kubectl prints "Warning: <text>"; client-go logs it).
// Invariants:
// - A CRD version with `deprecated: true` warns with its `deprecationWarning`, or with the default
//   text of apiextensions-apiserver (customresource_handler.go defaultDeprecationWarning):
//   "<group>/<version> <Kind> is deprecated", plus "; use <group>/<v> <Kind>" naming the most
//   preferred served, non-deprecated version that is preferred over the deprecated one.
// - Versions are ordered as Kubernetes orders them (apimachinery's CompareKubeAwareVersionStrings):
//   GA above beta above alpha, then by major, then by minor; names of another form sort below,
//   in reverse alphabetical order.
// - Every verb on the version warns (reads, writes, watches, errors), once per response.

const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/
const STABILITY: Record<string, number> = { alpha: 0, beta: 1, '': 2 }

/** > 0 when `a` is preferred over `b`, < 0 when `b` is, 0 when equal. */
export function compareKubeAwareVersions(a: string, b: string): number {
  if (a === b) return 0
  const ma = KUBE_VERSION.exec(a)
  const mb = KUBE_VERSION.exec(b)
  if (!ma && !mb) return b < a ? -1 : 1
  if (!ma) return -1
  if (!mb) return 1
  const ta = STABILITY[ma[2] ?? '']!
  const tb = STABILITY[mb[2] ?? '']!
  if (ta !== tb) return ta - tb
  if (ma[1] !== mb[1]) return Number(ma[1]) - Number(mb[1])
  return Number(ma[3] ?? 0) - Number(mb[3] ?? 0)
}

/** The Warning text of a CRD version, or undefined when it is not deprecated. */
export function crdDeprecationWarning(version: any, spec: any): string | undefined {
  if (version?.deprecated !== true) return undefined
  if (typeof version.deprecationWarning === 'string') return version.deprecationWarning
  const kind = spec?.names?.kind
  const msg = `${spec?.group}/${version.name} ${kind} is deprecated`
  const newer = ((spec?.versions ?? []) as any[])
    .filter((v) => v.served && !v.deprecated && compareKubeAwareVersions(version.name, v.name) < 0)
    .map((v) => String(v.name))
    .sort((x, y) => compareKubeAwareVersions(y, x))
  return newer.length ? `${msg}; use ${spec.group}/${newer[0]} ${kind}` : msg
}
