// Defaults of the built-in kinds, as kube-apiserver's SetDefaults_* functions and its default
// admission plugins (ServiceAccount, DefaultTolerationSeconds, Priority) fill them: a controller
// that compares what it wants with what is stored sees the same fields here as on a real cluster.
// Invariants:
// - A default fills an absent field only; what the client sent is never changed.
// - The input is never changed: the step returns a new object (stored objects are frozen).
// - Service cluster IPs come from 10.96.0.0/12 and node ports from 30000-32767, never reused while
//   the server runs; an update that leaves them out keeps the allocated ones (patchAllocatedValues).
import type { AdmissionRequest } from './admission.ts'

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v)
const fill = (o: Record<string, any>, defaults: Record<string, unknown>) => {
  for (const [k, v] of Object.entries(defaults)) if (o[k] === undefined) o[k] = structuredClone(v)
}

function imagePullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent'
  const last = image.split('/').pop() ?? ''
  if (image.includes('@')) return 'IfNotPresent'
  const tag = last.includes(':') ? last.split(':').pop() : undefined
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent'
}

function container(c: any): any {
  if (!isObj(c)) return c
  const out = { ...c }
  fill(out, { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', resources: {} })
  if (out.imagePullPolicy === undefined) out.imagePullPolicy = imagePullPolicy(out.image)
  if (Array.isArray(out.ports))
    out.ports = out.ports.map((p: any) => (isObj(p) && p.protocol === undefined ? { ...p, protocol: 'TCP' } : p))
  return out
}

/** SetDefaults_PodSpec and its containers' defaults. */
export function podSpec(spec: any, pod = false): any {
  if (!isObj(spec)) return spec
  const out = { ...spec }
  fill(out, {
    restartPolicy: 'Always',
    dnsPolicy: 'ClusterFirst',
    schedulerName: 'default-scheduler',
    securityContext: {},
    terminationGracePeriodSeconds: 30,
  })
  if (pod) {
    // admission plugins a real cluster runs on Pods (ServiceAccount, Priority, DefaultTolerationSeconds)
    fill(out, { serviceAccountName: 'default', priority: 0, enableServiceLinks: true, preemptionPolicy: 'PreemptLowerPriority' })
    if (out.serviceAccount === undefined) out.serviceAccount = out.serviceAccountName
    const tolerations = Array.isArray(out.tolerations) ? [...out.tolerations] : []
    for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'])
      if (!tolerations.some((t: any) => t?.key === key))
        tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 })
    out.tolerations = tolerations
  }
  for (const k of ['containers', 'initContainers'] as const) if (Array.isArray(out[k])) out[k] = out[k].map(container)
  return out
}

/** A strategy defaulted field by field: type RollingUpdate, and its parameters when it is one. */
function rollingUpdate(strategy: unknown, params: Record<string, unknown>): any {
  const s: Record<string, any> = isObj(strategy) ? { ...strategy } : {}
  fill(s, { type: 'RollingUpdate' })
  if (s.type === 'RollingUpdate') {
    const ru: Record<string, unknown> = isObj(s.rollingUpdate) ? { ...s.rollingUpdate } : {}
    fill(ru, params)
    s.rollingUpdate = ru
  }
  return s
}

function template(t: any): any {
  return isObj(t) ? { ...t, spec: podSpec(t.spec) } : t
}

export class ServiceAllocator {
  private nextIp = 10 // 10.96.0.1 is the kubernetes Service's, the first few are left as a real cluster leaves them
  private nextPort = 30000
  clusterIp(): string {
    const n = this.nextIp++
    return `10.${96 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`
  }
  nodePort(): number {
    if (this.nextPort > 32767) this.nextPort = 30000
    return this.nextPort++
  }
}

function service(req: AdmissionRequest, alloc: ServiceAllocator): any {
  const o = req.object
  const spec = isObj(o.spec) ? { ...o.spec } : {}
  const old = req.oldObject?.spec
  if (old) {
    // an update that leaves out the allocated values keeps them (patchAllocatedValues)
    if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = old.clusterIP
    if (spec.clusterIPs === undefined) spec.clusterIPs = old.clusterIPs
  }
  fill(spec, { type: 'ClusterIP', sessionAffinity: 'None', internalTrafficPolicy: 'Cluster' })
  if (spec.type !== 'ExternalName') {
    if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = alloc.clusterIp()
    if (spec.clusterIPs === undefined) spec.clusterIPs = [spec.clusterIP]
    fill(spec, { ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' })
  }
  const nodePorts = spec.type === 'NodePort' || spec.type === 'LoadBalancer'
  if (nodePorts) fill(spec, { externalTrafficPolicy: 'Cluster' })
  if (spec.type === 'LoadBalancer') fill(spec, { allocateLoadBalancerNodePorts: true })
  if (Array.isArray(spec.ports))
    spec.ports = spec.ports.map((p: any, i: number) => {
      if (!isObj(p)) return p
      const q = { ...p }
      fill(q, { protocol: 'TCP' })
      if (q.targetPort === undefined && q.port !== undefined) q.targetPort = q.port
      if (nodePorts && q.nodePort === undefined) q.nodePort = old?.ports?.[i]?.nodePort ?? alloc.nodePort()
      return q
    })
  const out = { ...o, spec }
  if (req.operation === 'CREATE' && out.status === undefined) out.status = { loadBalancer: {} }
  return out
}

/** The mutating step: fills the built-in kinds' defaults. */
export function builtinDefaultsStep(alloc: ServiceAllocator) {
  return (req: AdmissionRequest): void => {
    const t = req.type
    if (!t.builtin || req.subresource === 'status') return
    const o = req.object
    const spec = isObj(o.spec) ? { ...o.spec } : undefined
    const key = `${t.group}/${t.resource}`
    switch (key) {
      case '/pods':
        req.object = { ...o, spec: podSpec(o.spec, true) }
        if (req.operation === 'CREATE' && o.status === undefined) req.object.status = { phase: 'Pending', qosClass: 'BestEffort' }
        return
      case '/services':
        req.object = service(req, alloc)
        return
      case '/persistentvolumeclaims':
        if (spec) fill(spec, { volumeMode: 'Filesystem' })
        req.object = {
          ...o,
          ...(spec ? { spec } : {}),
          ...(req.operation === 'CREATE' && !o.status ? { status: { phase: 'Pending' } } : {}),
        }
        return
    }
    if (!spec) return
    switch (key) {
      case 'apps/deployments':
        fill(spec, { replicas: 1, revisionHistoryLimit: 10, progressDeadlineSeconds: 600 })
        // field by field, as SetDefaults_Deployment (kubectl create sends `strategy: {}`)
        spec.strategy = rollingUpdate(spec.strategy, { maxUnavailable: '25%', maxSurge: '25%' })
        spec.template = template(spec.template)
        break
      case 'apps/statefulsets':
        fill(spec, {
          replicas: 1,
          podManagementPolicy: 'OrderedReady',
          revisionHistoryLimit: 10,
          persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
        })
        spec.updateStrategy = rollingUpdate(spec.updateStrategy, { partition: 0 })
        spec.template = template(spec.template)
        break
      case 'apps/daemonsets':
        fill(spec, {
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
          revisionHistoryLimit: 10,
        })
        spec.template = template(spec.template)
        break
      case 'apps/replicasets':
        fill(spec, { replicas: 1 })
        spec.template = template(spec.template)
        break
      case 'batch/jobs':
        jobSpec(spec, o.metadata?.uid, o.metadata?.name, req.operation === 'CREATE')
        break
      case 'batch/cronjobs':
        fill(spec, { concurrencyPolicy: 'Allow', suspend: false, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 })
        if (isObj(spec.jobTemplate) && isObj(spec.jobTemplate.spec)) {
          const js = { ...spec.jobTemplate.spec }
          jobSpec(js, undefined, undefined, false)
          spec.jobTemplate = { ...spec.jobTemplate, spec: js }
        }
        break
      case 'networking.k8s.io/networkpolicies':
        if (spec.policyTypes === undefined) spec.policyTypes = spec.egress ? ['Ingress', 'Egress'] : ['Ingress']
        break
      case 'autoscaling/horizontalpodautoscalers':
        fill(spec, { minReplicas: 1 })
        break
      default:
        return
    }
    req.object = { ...o, spec }
  }
}

/** Job defaults; on create the selector and template labels the Job controller's uid selects by. */
function jobSpec(spec: any, uid: string | undefined, name: string | undefined, create: boolean): void {
  fill(spec, { backoffLimit: 6, completionMode: 'NonIndexed', suspend: false, podReplacementPolicy: 'TerminatingOrFailed' })
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1
  fill(spec, { parallelism: 1 })
  spec.template = template(spec.template)
  if (create && uid && name && spec.manualSelector !== true && spec.selector === undefined) {
    const labels = {
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': name,
      'controller-uid': uid,
      'job-name': name,
    }
    spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } }
    const tpl = isObj(spec.template) ? spec.template : {}
    spec.template = { ...tpl, metadata: { ...(tpl.metadata ?? {}), labels: { ...(tpl.metadata?.labels ?? {}), ...labels } } }
  }
}
