// What a Manager needs to be deployed, derived from what it was told to do (as kubebuilder derives
// RBAC from its markers): the ClusterRole of exactly the requests its parts make, the CRDs of its
// custom kinds, a ServiceAccount and binding, and a Deployment that passes controller-runtime's flags.
// Invariants:
// - Each rule comes from a part and the requests that part makes (test/rbac.test.ts runs a controller,
//   records every request, and checks that the generated role allows each one and has nothing unused):
//   a watch lists and watches; an owned kind is applied (patch) and deleted, and read (get) before
//   the first write of one not yet observed and when a conditional apply gets 409 (preconditions,
//   on with leader election and sharding); a reconcile step patches
//   /status; a finalizer reads (after a 409) and patches the object, and patches /status for its
//   condition; Events are created and patched (aggregation); leader election gets, creates and
//   updates its Lease; sharding also lists and deletes member Leases; installCrds gets and patches CRDs;
//   a reconcile step's or finalizer's kind gets `<kind>/finalizers: update` (a child's owner reference
//   with blockOwnerDeletion needs it where OwnerReferencesPermissionEnforcement is on, as kubebuilder
//   scaffolds it); a Component adds the rules it declares (`rbac`), and manifests() the `extraRules`.
// - A kind's resource is its ResourceRef's, else the lower-case plural the Manager names tables by.
// - A CRD whose versions convert through a webhook points at the webhook Service's /convert, its CA
//   injected by cert-manager as the WebhookConfigurations' is; one whose kind the Manager does not
//   convert (no m.webhook({ for })) is a ConfigError: the API server could not serve it.
import { groupOf, type KindRef, type KubeObject } from '@statewright/k8s'
import type { Table } from '@statewright/statedb'
import type { ManagerOptions } from './options.ts'

import { plural } from './watch.ts'
import { webhookPath } from '../webhooks/server.ts'
import { CONVERT_PATH, webhookConversionOf } from '../webhooks/conversion.ts'
import { ConfigError } from '../errors.ts'
import type { PolicyRule } from './component.ts'

export type { PolicyRule }

/** rbac.authorization.k8s.io/v1 PolicyRule. */
/** What the rules and manifests are derived from (a Manager's parts). */
export interface ManagerShape {
  name: string
  watched: ReadonlyArray<KindRef<any>>
  owned: ReadonlyArray<KindRef<any>>
  statusWritten: ReadonlyArray<KindRef<any>>
  finalized: ReadonlyArray<{ kind: KindRef<any>; condition: boolean }>
  leaderElection: boolean
  sharding: boolean
  /** Applies carry resourceVersion preconditions: the Target reads an object before its first write and after a 409. */
  preconditions: boolean
  crds: ReadonlyArray<KubeObject>
  /** The Manager installs CRDs at start (installCrds): it reads and applies them. */
  installsCrds?: boolean
  /** Kinds with admission webhooks (served by the Manager's webhook server). */
  webhooks?: ReadonlyArray<{ kind: KindRef<any>; validate: boolean; mutate: boolean }>
  /** Rules the Manager's components declare for the requests they make themselves. */
  extraRules?: ReadonlyArray<PolicyRule>
}

/** A Manager's shape from its registrations (the tables of reconcile steps and finalizers by their watched kind). */
export function shapeOf(p: {
  name: string
  options: ManagerOptions
  watched: ReadonlyArray<{ kind: KindRef<any>; table: Table<any> }>
  owned: ReadonlyArray<KindRef<any>>
  statusTables: ReadonlyArray<Table<any>>
  finalizedTables: ReadonlyArray<{ table: Table<any>; condition: boolean }>
  webhookKinds: NonNullable<ManagerShape['webhooks']>
  extraRules?: ReadonlyArray<PolicyRule>
}): ManagerShape {
  const o = p.options
  const kindOf = (t: Table<any>) => p.watched.find((w) => w.table === t)?.kind
  const crds = new Map<string, KubeObject>()
  for (const k of [...(o.installCrds ?? []), ...p.watched.map((w) => w.kind as { crd?: KubeObject })])
    if (k.crd) crds.set(String(k.crd.metadata.name), k.crd)
  return {
    name: p.name,
    watched: p.watched.map((w) => w.kind),
    owned: p.owned,
    statusWritten: p.statusTables.map(kindOf).filter((k): k is KindRef<any> => !!k),
    finalized: p.finalizedTables.flatMap((f) => {
      const kind = kindOf(f.table)
      return kind ? [{ kind, condition: f.condition }] : []
    }),
    leaderElection: !!o.leaderElection,
    sharding: !!o.sharding,
    preconditions: (!!o.sharding && o.sharding.preconditions !== false) || (!!o.leaderElection && o.leaderElection.preconditions !== false),
    crds: [...crds.values()],
    webhooks: p.webhookKinds,
    installsCrds: (o.installCrds ?? []).length > 0,
    extraRules: p.extraRules ?? [],
  }
}

export interface ManifestOptions {
  /** The namespace of the ServiceAccount and Deployment (default "<name>-system"). */
  namespace?: string
  /** The operator's image (default "<name>:latest"). */
  image?: string
  /** Default 2 with leader election or sharding, else 1. */
  replicas?: number
  /** Deploy with leader election (`--leader-elect`, its Lease rules) whatever the Manager was made with. */
  leaderElection?: boolean
  /** Rules for requests of your own code (merged into the ClusterRole). */
  extraRules?: ReadonlyArray<PolicyRule>
}

/** The API group of an apiVersion ("" for the core group). */
const VERB_ORDER = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']
const resourceOf = (k: KindRef<any>) => (k as { resource?: string }).resource ?? plural(k.kind)

/** The ClusterRole's rules: one per (group, resource), verbs in the usual order. */
export function rbacRules(m: ManagerShape): PolicyRule[] {
  const rules = new Map<string, Set<string>>()
  const allow = (group: string, resource: string, ...verbs: string[]) => {
    const key = `${group}\u0000${resource}`
    let v = rules.get(key)
    if (!v) rules.set(key, (v = new Set()))
    for (const x of verbs) v.add(x)
  }
  for (const k of m.watched) allow(groupOf(k.apiVersion), resourceOf(k), 'list', 'watch')
  for (const k of m.owned) {
    allow(groupOf(k.apiVersion), resourceOf(k), 'list', 'watch', 'patch', 'delete')
    if (m.preconditions) allow(groupOf(k.apiVersion), resourceOf(k), 'get')
  }
  for (const k of m.statusWritten) {
    allow(groupOf(k.apiVersion), `${resourceOf(k)}/status`, 'patch')
    allow(groupOf(k.apiVersion), `${resourceOf(k)}/finalizers`, 'update')
  }
  for (const f of m.finalized) {
    allow(groupOf(f.kind.apiVersion), resourceOf(f.kind), 'get', 'patch')
    allow(groupOf(f.kind.apiVersion), `${resourceOf(f.kind)}/finalizers`, 'update')
    if (f.condition) allow(groupOf(f.kind.apiVersion), `${resourceOf(f.kind)}/status`, 'patch')
  }
  for (const r of m.extraRules ?? []) for (const g of r.apiGroups) for (const res of r.resources) allow(g, res, ...r.verbs)
  allow('', 'events', 'create', 'patch')
  if (m.leaderElection) allow('coordination.k8s.io', 'leases', 'get', 'create', 'update')
  if (m.sharding) allow('coordination.k8s.io', 'leases', 'get', 'list', 'create', 'update', 'delete')
  if (m.installsCrds) allow('apiextensions.k8s.io', 'customresourcedefinitions', 'get', 'patch')
  return [...rules]
    .map(([key, verbs]) => {
      const [group, resource] = key.split('\u0000') as [string, string]
      const others = [...verbs].filter((v) => !VERB_ORDER.includes(v)).sort() // '*', escalate, bind, ...
      return { apiGroups: [group], resources: [resource], verbs: [...VERB_ORDER.filter((v) => verbs.has(v)), ...others] }
    })
    .sort((a, b) => `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`))
}

/** The objects to deploy the Manager: its CRDs, ServiceAccount, ClusterRole and binding, Deployment. */
export function manifests(shape: ManagerShape, o: ManifestOptions = {}): KubeObject[] {
  const elected: ManagerShape =
    o.leaderElection === undefined
      ? shape
      : { ...shape, leaderElection: o.leaderElection, preconditions: shape.preconditions || o.leaderElection }
  const m: ManagerShape = o.extraRules ? { ...elected, extraRules: [...(elected.extraRules ?? []), ...o.extraRules] } : elected
  const ns = o.namespace ?? `${m.name}-system`
  const image = o.image ?? `${m.name}:latest`
  const replicas = o.replicas ?? (m.leaderElection || m.sharding ? 2 : 1)
  const labels = { 'app.kubernetes.io/name': m.name }
  const args = ['--metrics-bind-address=:8080', '--health-probe-bind-address=:8081', ...(m.leaderElection ? ['--leader-elect'] : [])]
  const probe = (path: string) => ({ httpGet: { path, port: 'probes' }, periodSeconds: 10 })
  const hooks = m.webhooks ?? []
  const certSecret = `${m.name}-webhook-cert`
  return [
    ...m.crds.map((crd) => withConversionService(crd, m.name, ns, hooks)),
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: m.name, namespace: ns } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: m.name }, rules: rbacRules(m) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: m.name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: m.name },
      subjects: [{ kind: 'ServiceAccount', name: m.name, namespace: ns }],
    },
    ...(hooks.length ? webhookManifests(m.name, ns, hooks, certSecret, labels) : []),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: m.name, namespace: ns, labels },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels, annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080' } },
          spec: {
            serviceAccountName: m.name,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'manager',
                image,
                args,
                env: [{ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
                ports: [
                  { name: 'metrics', containerPort: 8080 },
                  { name: 'probes', containerPort: 8081 },
                  ...(hooks.length ? [{ name: 'webhooks', containerPort: 9443 }] : []),
                ],
                livenessProbe: probe('/healthz'),
                readinessProbe: probe('/readyz'),
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
                ...(hooks.length
                  ? { volumeMounts: [{ name: 'webhook-cert', mountPath: '/tmp/k8s-webhook-server/serving-certs', readOnly: true }] }
                  : {}),
              },
            ],
            ...(hooks.length ? { volumes: [{ name: 'webhook-cert', secret: { secretName: certSecret } }] } : {}),
          },
        },
      },
    },
  ]
}

/** A CRD converted by a webhook, pointed at the Manager's webhook Service (see the file's invariants). */
function withConversionService(crd: KubeObject, name: string, ns: string, hooks: NonNullable<ManagerShape['webhooks']>): KubeObject {
  const spec = crd.spec as { group?: string; names?: { kind?: string }; conversion?: { strategy?: string; webhook?: any } } | undefined
  if (spec?.conversion?.strategy !== 'Webhook' || spec.conversion.webhook?.clientConfig) return crd
  const served = hooks.some((h) => {
    const c = webhookConversionOf(h.kind)
    return c?.group === spec.group && c?.kind === spec.names?.kind
  })
  if (!served)
    throw new ConfigError(
      `manifests: CustomResourceDefinition ${crd.metadata.name} converts through a webhook, but Manager "${name}" does not serve /convert for ${spec.names?.kind}: add m.webhook({ for: ${spec.names?.kind} })`,
    )
  const service = { name: `${name}-webhook`, namespace: ns, path: CONVERT_PATH, port: 443 }
  return {
    ...crd,
    metadata: { ...crd.metadata, annotations: { ...crd.metadata.annotations, 'cert-manager.io/inject-ca-from': `${ns}/${name}-webhook` } },
    spec: { ...spec, conversion: { ...spec.conversion, webhook: { ...spec.conversion.webhook, clientConfig: { service } } } },
  }
}

/**
 * The webhooks' Service, WebhookConfigurations and their certificate, as kubebuilder's config does
 * it: cert-manager issues the serving certificate into a Secret the Deployment mounts, and injects
 * its CA into the configurations (the cert-manager.io/inject-ca-from annotation).
 */
function webhookManifests(
  name: string,
  ns: string,
  hooks: NonNullable<ManagerShape['webhooks']>,
  certSecret: string,
  labels: Record<string, string>,
): KubeObject[] {
  const service = `${name}-webhook`
  const inject = { 'cert-manager.io/inject-ca-from': `${ns}/${service}` }
  const entry = (h: (typeof hooks)[number], what: 'validate' | 'mutate') => {
    const group = groupOf(h.kind.apiVersion)
    const version = h.kind.apiVersion.split('/').pop()!
    return {
      name: `${what === 'validate' ? 'v' : 'm'}${h.kind.kind.toLowerCase()}.${group || 'core.k8s.io'}`,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      clientConfig: { service: { name: service, namespace: ns, path: webhookPath(h.kind, what) } },
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [group], apiVersions: [version], resources: [resourceOf(h.kind)] }],
    }
  }
  const config = (kind: string, what: 'validate' | 'mutate') => {
    const list = hooks.filter((h) => h[what]).map((h) => entry(h, what))
    return list.length
      ? [
          {
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind,
            metadata: { name: `${name}-${what}`, annotations: inject },
            webhooks: list,
          },
        ]
      : []
  }
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: service, namespace: ns },
      spec: { selector: labels, ports: [{ port: 443, targetPort: 'webhooks' }] },
    },
    { apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name: `${name}-selfsigned`, namespace: ns }, spec: { selfSigned: {} } },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: service, namespace: ns },
      spec: {
        secretName: certSecret,
        dnsNames: [`${service}.${ns}.svc`, `${service}.${ns}.svc.cluster.local`],
        issuerRef: { kind: 'Issuer', name: `${name}-selfsigned` },
      },
    },
    ...config('MutatingWebhookConfiguration', 'mutate'),
    ...config('ValidatingWebhookConfiguration', 'validate'),
  ]
}
