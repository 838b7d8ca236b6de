// Server-side Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what kubectl get
// asks for): the built-in kinds' usual columns and a CRD's additionalPrinterColumns (JSONPath), rows
// carrying the object's metadata (PartialObjectMetadata), as kube-apiserver's table convertors do.
// Invariant: a kind with no printer of its own gets Name and Age (a CRD without printer columns too).
import type { ResourceType } from './resources.ts'

interface Column {
  name: string
  type: string
  format?: string
  description?: string
  priority?: number
  cell: (o: any) => unknown
}

/** Whether an Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept)
}

export function humanAge(since: string | undefined, now = Date.now()): string {
  if (!since) return '<unknown>'
  const s = Math.max(0, Math.floor((now - Date.parse(since)) / 1000))
  if (s < 120) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`
  if (m < 180) return `${m}m`
  const h = Math.floor(m / 60)
  if (h < 8) return `${h}h${m % 60 ? `${m % 60}m` : ''}`
  if (h < 48) return `${h}h`
  const d = Math.floor(h / 24)
  return d < 8 && h % 24 ? `${d}d${h % 24}h` : `${d}d`
}

const NAME: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  cell: (o) => o.metadata?.name,
}
const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp', cell: (o) => humanAge(o.metadata?.creationTimestamp) }
const col = (name: string, cell: (o: any) => unknown, type = 'string', priority = 0): Column => ({ name, type, priority, cell })
const count = (m: unknown) => (m && typeof m === 'object' ? Object.keys(m).length : 0)

function ports(o: any): string {
  const ps = o.spec?.ports ?? []
  if (!ps.length) return '<none>'
  return ps.map((p: any) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`).join(',')
}

const BUILTIN: Record<string, Column[]> = {
  '/pods': [
    NAME,
    col('Ready', (o) => `${(o.status?.containerStatuses ?? []).filter((c: any) => c.ready).length}/${(o.spec?.containers ?? []).length}`),
    col('Status', (o) => (o.metadata?.deletionTimestamp ? 'Terminating' : (o.status?.phase ?? 'Pending'))),
    col('Restarts', (o) => (o.status?.containerStatuses ?? []).reduce((n: number, c: any) => n + (c.restartCount ?? 0), 0), 'string'),
    AGE,
    col('IP', (o) => o.status?.podIP ?? '<none>', 'string', 1),
    col('Node', (o) => o.spec?.nodeName ?? '<none>', 'string', 1),
  ],
  'apps/deployments': [
    NAME,
    col('Ready', (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}`),
    col('Up-to-date', (o) => o.status?.updatedReplicas ?? 0, 'integer'),
    col('Available', (o) => o.status?.availableReplicas ?? 0, 'integer'),
    AGE,
  ],
  'apps/statefulsets': [NAME, col('Ready', (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}`), AGE],
  '/services': [
    NAME,
    col('Type', (o) => o.spec?.type ?? 'ClusterIP'),
    col('Cluster-IP', (o) => o.spec?.clusterIP ?? '<none>'),
    col('External-IP', (o) => (o.status?.loadBalancer?.ingress ?? []).map((i: any) => i.ip ?? i.hostname).join(',') || '<none>'),
    col('Port(s)', ports),
    AGE,
  ],
  '/configmaps': [NAME, col('Data', (o) => count(o.data) + count(o.binaryData), 'integer'), AGE],
  '/secrets': [NAME, col('Type', (o) => o.type ?? 'Opaque'), col('Data', (o) => count(o.data), 'integer'), AGE],
  '/namespaces': [NAME, col('Status', (o) => o.status?.phase ?? 'Active'), AGE],
  '/serviceaccounts': [NAME, col('Secrets', (o) => (o.secrets ?? []).length, 'integer'), AGE],
  'batch/jobs': [
    NAME,
    col('Completions', (o) => `${o.status?.succeeded ?? 0}/${o.spec?.completions ?? 1}`),
    col('Duration', () => ''),
    AGE,
  ],
  'batch/cronjobs': [
    NAME,
    col('Schedule', (o) => o.spec?.schedule),
    col('Suspend', (o) => String(!!o.spec?.suspend)),
    col('Active', (o) => (o.status?.active ?? []).length, 'integer'),
    AGE,
  ],
}

/** A CRD printer column's JSONPath: `.a.b`, `.a[0]`, `.a[*].b`, `.conditions[?(@.type=="Ready")].status`. */
export function jsonPath(obj: unknown, path: string): unknown {
  let cur: unknown[] = [obj]
  const re = /\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\*\]|\[\?\(@\.([A-Za-z0-9_-]+)\s*==\s*["']([^"']*)["']\)\]/g
  const p = path.replace(/^\{|\}$/g, '')
  for (const m of p.matchAll(re)) {
    const next: unknown[] = []
    for (const v of cur) {
      if (m[1] !== undefined) (v as any)?.[m[1]] !== undefined && next.push((v as any)[m[1]])
      else if (m[2] !== undefined) Array.isArray(v) && v[Number(m[2])] !== undefined && next.push(v[Number(m[2])])
      else if (m[3] !== undefined) Array.isArray(v) && next.push(...v.filter((x: any) => String(x?.[m[3]!]) === m[4]))
      else if (Array.isArray(v)) next.push(...v)
    }
    cur = next
  }
  if (cur.length === 0) return undefined
  return cur.length === 1 ? cur[0] : cur.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(',')
}

function columnsOf(t: ResourceType): Column[] {
  if (t.builtin) return BUILTIN[`${t.group}/${t.resource}`] ?? [NAME, AGE]
  const apc = t.printerColumns
  if (!apc || apc.length === 0) return [NAME, AGE]
  return [
    NAME,
    ...apc.map((c) => ({
      name: c.name,
      type: c.type,
      ...(c.format ? { format: c.format } : {}),
      ...(c.description ? { description: c.description } : {}),
      priority: c.priority ?? 0,
      cell: (o: any) => {
        const v = jsonPath(o, c.jsonPath)
        return c.type === 'date' && typeof v === 'string' ? humanAge(v) : (v ?? null)
      },
    })),
  ]
}

/** The Table for a list of objects (or one object). */
export function toTable(
  t: ResourceType,
  items: any[],
  resourceVersion: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const cols = columnsOf(t)
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion, ...extra },
    columnDefinitions: cols.map(({ cell: _c, ...d }) => ({ description: '', format: '', priority: 0, ...d })),
    rows: items.map((o) => ({
      cells: cols.map((c) => c.cell(o)),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  }
}
