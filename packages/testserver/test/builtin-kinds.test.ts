// Built-in kinds: the standard kinds served, with the defaults, validations, immutable fields and size
// limits a controller author meets on a real cluster (issue 30: "Built-in objects are not validated",
// "10 of 17 standard kinds are not served", "no /scale", "no clusterIP is allocated").
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, cm, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const tpl = (labels: Record<string, string>, containers: any[] = [{ name: 'app', image: 'nginx:1.27' }], restartPolicy?: string) => ({
  metadata: { labels },
  spec: { containers, ...(restartPolicy ? { restartPolicy } : {}) },
})
const deployment = (name: string, spec: any) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec })
const DEPLOYS = '/apis/apps/v1/namespaces/default/deployments'
const SVCS = '/api/v1/namespaces/default/services'

test('the standard kinds are served: a minimal valid object of each is created', async () => {
  const objs: Array<[string, any]> = [
    ['/apis/batch/v1/namespaces/default/jobs', { metadata: { name: 'j' }, spec: { template: tpl({}, undefined, 'Never') } }],
    [
      '/apis/batch/v1/namespaces/default/cronjobs',
      { metadata: { name: 'cj' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: tpl({}, undefined, 'OnFailure') } } } },
    ],
    [
      '/apis/networking.k8s.io/v1/namespaces/default/ingresses',
      {
        metadata: { name: 'ing' },
        spec: {
          rules: [{ http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }] } }],
        },
      },
    ],
    ['/apis/networking.k8s.io/v1/namespaces/default/networkpolicies', { metadata: { name: 'np' }, spec: { podSelector: {} } }],
    [
      '/apis/policy/v1/namespaces/default/poddisruptionbudgets',
      { metadata: { name: 'pdb' }, spec: { minAvailable: 1, selector: { matchLabels: { a: 'b' } } } },
    ],
    [
      '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers',
      { metadata: { name: 'hpa' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, maxReplicas: 3 } },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles',
      { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings',
      { metadata: { name: 'rb' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [] },
    ],
    [
      '/api/v1/namespaces/default/persistentvolumeclaims',
      { metadata: { name: 'pvc' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    ],
    ['/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', { metadata: { name: 'es' }, addressType: 'IPv4', endpoints: [] }],
    [
      '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
      { metadata: { name: 'vap' }, spec: { validations: [{ expression: 'true' }] } },
    ],
  ]
  for (const [path, body] of objs) {
    const res = await http(e, 'POST', path, body)
    assert.is(res.status, 201, `${path}: ${JSON.stringify(res.body)}`)
  }
  const job = e.server.control.get({ apiVersion: 'batch/v1', kind: 'Job' }, 'j')
  assert.is(job.spec.backoffLimit, 6)
  assert.equal(job.spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': job.metadata.uid } })
  assert.is(job.spec.template.metadata.labels['job-name'], 'j')
  assert.equal(e.server.control.get({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' }, 'np').spec.policyTypes, ['Ingress'])
})

test('Deployment: defaults of the spec and its pod template; selector must match; selector immutable', async () => {
  const d = (
    await http(e, 'POST', DEPLOYS, deployment('web', { selector: { matchLabels: { app: 'web' } }, template: tpl({ app: 'web' }) }))
  ).body
  assert.is(d.spec.replicas, 1)
  assert.equal(d.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } })
  assert.is(d.spec.revisionHistoryLimit, 10)
  assert.is(d.spec.progressDeadlineSeconds, 600)
  const pod = d.spec.template.spec
  assert.is(pod.restartPolicy, 'Always')
  assert.is(pod.dnsPolicy, 'ClusterFirst')
  assert.is(pod.terminationGracePeriodSeconds, 30)
  assert.is(pod.containers[0].imagePullPolicy, 'IfNotPresent')
  assert.is(pod.containers[0].terminationMessagePath, '/dev/termination-log')
  const mismatch = await http(
    e,
    'POST',
    DEPLOYS,
    deployment('mis', { selector: { matchLabels: { app: 'a' } }, template: tpl({ app: 'b' }) }),
  )
  assert.is(mismatch.status, 422)
  assert.is(
    mismatch.body.message,
    'Deployment.apps "mis" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"b"}: `selector` does not match template `labels`',
  )
  const moved = await http(e, 'PUT', `${DEPLOYS}/web`, {
    ...d,
    spec: { ...d.spec, selector: { matchLabels: { app: 'x' } }, template: tpl({ app: 'x' }) },
  })
  assert.is(moved.status, 422)
  assert.is(moved.body.details.causes[0].field, 'spec.selector')
  assert.match(moved.body.message, 'field is immutable')
  const three = await http(
    e,
    'POST',
    DEPLOYS,
    deployment('three', { replicas: 'three', selector: { matchLabels: { a: 'b' } }, template: tpl({ a: 'b' }) }),
  )
  assert.is(three.status, 400)
  assert.match(three.body.message, 'cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32')
})

test('unknown fields of a built-in kind are dropped with a Warning; Strict refuses them', async () => {
  const body = deployment('typo', { replicsa: 3, selector: { matchLabels: { a: 't' } }, template: tpl({ a: 't' }) })
  const res = await http(e, 'POST', DEPLOYS, body)
  assert.is(res.status, 201)
  assert.is(res.body.spec.replicsa, undefined)
  assert.is(res.body.spec.replicas, 1, 'defaulted, the typo dropped')
  assert.is(res.headers.get('warning'), '299 - "unknown field \\"spec.replicsa\\""')
  const strict = await http(e, 'POST', `${DEPLOYS}?fieldValidation=Strict`, { ...body, metadata: { name: 'typo2' } })
  assert.is(strict.status, 400)
  assert.match(strict.body.message, 'strict decoding error: unknown field "spec.replicsa"')
  const cmRes = await http(e, 'POST', '/api/v1/namespaces/default/configmaps', { ...cm('extra', { k: 'v' }), spec: { x: 1 } })
  assert.is(cmRes.body.spec, undefined)
  assert.equal(cmRes.body.data, { k: 'v' })
})

test('/scale reads and writes replicas through the object (Deployment)', async () => {
  await http(
    e,
    'POST',
    DEPLOYS,
    deployment('scaled', { replicas: 2, selector: { matchLabels: { app: 's' } }, template: tpl({ app: 's' }) }),
  )
  const s = (await http(e, 'GET', `${DEPLOYS}/scaled/scale`)).body
  assert.is(s.kind, 'Scale')
  assert.is(s.spec.replicas, 2)
  assert.is(s.status.selector, 'app=s')
  const put = await http(e, 'PUT', `${DEPLOYS}/scaled/scale`, { ...s, spec: { replicas: 5 } })
  assert.is(put.status, 200, JSON.stringify(put.body))
  assert.is(put.body.spec.replicas, 5)
  const patched = await http(e, 'PATCH', `${DEPLOYS}/scaled/scale`, { spec: { replicas: 7 } }, 'application/merge-patch+json')
  assert.is(patched.body.spec.replicas, 7)
  const d = e.server.control.get({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'scaled')
  assert.is(d.spec.replicas, 7)
  assert.is(d.metadata.generation, 3)
  const disc = (await http(e, 'GET', '/apis/apps/v1')).body
  assert.ok(disc.resources.some((r: any) => r.name === 'deployments/scale' && r.kind === 'Scale'))
})

test('Pod: a container needs an image; defaults and admission defaults; only images may change', async () => {
  const P = '/api/v1/namespaces/default/pods'
  const noImage = await http(e, 'POST', P, { metadata: { name: 'noimg' }, spec: { containers: [{ name: 'c' }] } })
  assert.is(noImage.status, 422)
  assert.is(noImage.body.message, 'Pod "noimg" is invalid: spec.containers[0].image: Required value')
  const p = (await http(e, 'POST', P, { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } })).body
  assert.is(p.spec.serviceAccountName, 'default')
  assert.is(p.spec.containers[0].imagePullPolicy, 'Always', 'no tag: latest')
  assert.is(p.spec.tolerations.length, 2)
  assert.is(p.status.phase, 'Pending')
  const img = await http(e, 'PUT', `${P}/p`, { ...p, spec: { ...p.spec, containers: [{ ...p.spec.containers[0], image: 'busybox:2' }] } })
  assert.is(img.status, 200)
  const other = await http(e, 'PUT', `${P}/p`, { ...img.body, spec: { ...img.body.spec, hostname: 'x' } })
  assert.is(other.status, 422)
  assert.match(other.body.message, 'pod updates may not change fields other than')
})

test('Service: clusterIP allocated, defaults, ports required, clusterIP immutable; an update leaving it out keeps it', async () => {
  const s = (await http(e, 'POST', SVCS, { metadata: { name: 'svc' }, spec: { selector: { app: 'x' }, ports: [{ port: 80 }] } })).body
  assert.match(s.spec.clusterIP, /^10\.96\.\d+\.\d+$/)
  assert.equal(s.spec.clusterIPs, [s.spec.clusterIP])
  assert.is(s.spec.type, 'ClusterIP')
  assert.equal(s.spec.ports, [{ port: 80, protocol: 'TCP', targetPort: 80 }])
  const s2 = (await http(e, 'POST', SVCS, { metadata: { name: 'svc2' }, spec: { ports: [{ port: 80 }] } })).body
  assert.is.not(s2.spec.clusterIP, s.spec.clusterIP)
  const kept = await http(e, 'PUT', `${SVCS}/svc`, { ...s, spec: { ports: [{ port: 81 }] } })
  assert.is(kept.status, 200, JSON.stringify(kept.body))
  assert.is(kept.body.spec.clusterIP, s.spec.clusterIP)
  const changed = await http(e, 'PUT', `${SVCS}/svc`, {
    ...kept.body,
    spec: { ...kept.body.spec, clusterIP: '10.96.9.9', clusterIPs: ['10.96.9.9'] },
  })
  assert.is(changed.status, 422)
  assert.match(changed.body.message, 'spec.clusterIPs[0]: Invalid value: []string{"10.96.9.9"}: may not change once set')
  assert.is(
    (await http(e, 'POST', SVCS, { metadata: { name: 'noports' }, spec: {} })).body.message,
    'Service "noports" is invalid: spec.ports: Required value',
  )
  const np = (await http(e, 'POST', SVCS, { metadata: { name: 'np' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } })).body
  assert.ok(np.spec.ports[0].nodePort >= 30000 && np.spec.ports[0].nodePort <= 32767)
})

test('names and labels: bad label syntax, namespace and Service names are 422', async () => {
  const bad = await http(e, 'POST', '/api/v1/namespaces/default/configmaps', cm('lbl', {}, { 'bad key!': 'v' }))
  assert.is(bad.status, 422)
  assert.is(bad.body.details.causes[0].field, 'metadata.labels')
  const val = await http(e, 'POST', '/api/v1/namespaces/default/configmaps', cm('lblv', {}, { k: '-bad-' }))
  assert.is(val.status, 422)
  assert.is((await http(e, 'POST', '/api/v1/namespaces', { metadata: { name: 'a.b' } })).status, 422)
  assert.is((await http(e, 'POST', SVCS, { metadata: { name: '1svc' }, spec: { ports: [{ port: 1 }] } })).status, 422)
})

test('size limits: a ConfigMap over 1 MiB, annotations over 256 KiB are 422 with the real messages', async () => {
  const big = await http(e, 'POST', '/api/v1/namespaces/default/configmaps', cm('big', { a: 'x'.repeat(1.1 * 1024 * 1024) }))
  assert.is(big.status, 422)
  assert.is(big.body.message, 'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes')
  const ann = await http(e, 'POST', '/api/v1/namespaces/default/configmaps', {
    ...cm('ann'),
    metadata: { name: 'ann', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(300 * 1024) } },
  })
  assert.is(ann.status, 422)
  assert.match(ann.body.message, 'metadata.annotations: Too long: must have at most 262144 bytes')
})

test('an immutable ConfigMap keeps its data and stays immutable', async () => {
  const c = (await http(e, 'POST', '/api/v1/namespaces/default/configmaps', { ...cm('frozen', { a: '1' }), immutable: true })).body
  const res = await http(e, 'PUT', '/api/v1/namespaces/default/configmaps/frozen', { ...c, data: { a: '2' } })
  assert.is(res.status, 422)
  assert.match(res.body.message, 'data: Forbidden: field is immutable when `immutable` is set')
  const unset = await http(e, 'PUT', '/api/v1/namespaces/default/configmaps/frozen', { ...c, immutable: false })
  assert.is(unset.status, 422)
})

test.run()
