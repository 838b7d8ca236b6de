// ValidatingAdmissionPolicy enforced, after kube-apiserver's test/integration/apiserver/cel/
// validatingadmissionpolicy_test.go (TestValidateOnlyAdmission and friends) and the documented
// examples of the feature (the replicas limit, with and without params), each test naming its case.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, type Env } from './helpers.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const AR = '/apis/admissionregistration.k8s.io/v1'
const DEPLOYMENTS = '/apis/apps/v1/namespaces/default/deployments'
const deployment = (name: string, replicas: number, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
  },
})
const rules = [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments'] }]
async function policy(
  name: string,
  spec: Record<string, any>,
  binding: Record<string, any> = { validationActions: ['Deny'] },
): Promise<() => Promise<void>> {
  const p = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: { matchConstraints: { resourceRules: rules }, ...spec },
  }
  assert.is((await http(e, 'POST', `${AR}/validatingadmissionpolicies`, p)).status, 201)
  const b = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `${name}-binding` },
    spec: { policyName: name, ...binding },
  }
  assert.is((await http(e, 'POST', `${AR}/validatingadmissionpolicybindings`, b)).status, 201)
  return async () => {
    await http(e, 'DELETE', `${AR}/validatingadmissionpolicybindings/${name}-binding`)
    await http(e, 'DELETE', `${AR}/validatingadmissionpolicies/${name}`)
  }
}

test("the replicas limit (Deny): a failed expression is 422 Invalid with kube-apiserver's message; a passing write is admitted", async () => {
  const done = await policy('demo-policy.example.com', { validations: [{ expression: 'object.spec.replicas <= 5' }] })
  const r = await http(e, 'POST', DEPLOYMENTS, deployment('big', 10))
  assert.is(r.status, 422, JSON.stringify(r.body))
  assert.is(r.body.reason, 'Invalid')
  assert.is(
    r.body.message,
    `deployments.apps "big" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-policy.example.com-binding' denied request: failed expression: object.spec.replicas <= 5`,
  )
  assert.is((await http(e, 'POST', DEPLOYMENTS, deployment('small', 3))).status, 201)
  await done()
  assert.is((await http(e, 'POST', DEPLOYMENTS, deployment('big', 10))).status, 201, 'unbound: admitted')
})

test('message, messageExpression and reason: Forbidden is 403; variables and oldObject on UPDATE', async () => {
  const done = await policy('grow-only', {
    variables: [{ name: 'old', expression: 'oldObject == null ? 0 : oldObject.spec.replicas' }],
    validations: [
      {
        expression: 'object.spec.replicas >= variables.old',
        messageExpression: "'replicas may not shrink below ' + string(variables.old)",
        reason: 'Forbidden',
      },
      { expression: "!has(object.metadata.labels) || !('frozen' in object.metadata.labels)", message: 'frozen' },
    ],
  })
  const created = await http(e, 'POST', DEPLOYMENTS, deployment('g', 4))
  assert.is(created.status, 201)
  const shrink = await http(e, 'PUT', `${DEPLOYMENTS}/g`, {
    ...deployment('g', 2),
    metadata: { name: 'g', resourceVersion: created.body.metadata.resourceVersion },
  })
  assert.is(shrink.status, 403)
  assert.is(shrink.body.reason, 'Forbidden')
  assert.match(shrink.body.message, 'denied request: replicas may not shrink below 4')
  const frozen = await http(e, 'POST', DEPLOYMENTS, deployment('f', 1, { frozen: 'yes' }))
  assert.is(frozen.status, 422)
  assert.match(frozen.body.message, 'denied request: frozen')
  await done()
})

test('Warn: the write is admitted with a Warning header; matchConditions keep a policy off', async () => {
  const done = await policy(
    'warn-only',
    {
      matchConditions: [{ name: 'not-system', expression: "!object.metadata.name.startsWith('system-')" }],
      validations: [{ expression: 'object.spec.replicas <= 1' }],
    },
    { validationActions: ['Warn'] },
  )
  const r = await http(e, 'POST', DEPLOYMENTS, deployment('w', 2))
  assert.is(r.status, 201)
  assert.match(
    r.headers.get('warning') ?? '',
    "Validation failed for ValidatingAdmissionPolicy 'warn-only' with binding 'warn-only-binding': failed expression: object.spec.replicas <= 1",
  )
  const skipped = await http(e, 'POST', DEPLOYMENTS, deployment('system-w', 2))
  assert.is(skipped.status, 201)
  assert.is(skipped.headers.get('warning'), null)
  await done()
})

test('params: a ConfigMap named by paramRef sets the limit; none found is denied (parameterNotFoundAction Deny) or allowed', async () => {
  const done = await policy(
    'param-limit',
    {
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      validations: [
        {
          expression: 'object.spec.replicas <= int(params.data.maxReplicas)',
          messageExpression: "'at most ' + params.data.maxReplicas + ' replicas'",
        },
      ],
    },
    { validationActions: ['Deny'], paramRef: { name: 'limits', namespace: 'default', parameterNotFoundAction: 'Deny' } },
  )
  const none = await http(e, 'POST', DEPLOYMENTS, deployment('p1', 1))
  assert.is(none.status, 422)
  assert.match(none.body.message, 'no params found for policy binding with `Deny` parameterNotFoundAction')
  assert.is(
    (
      await http(e, 'POST', '/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'limits' },
        data: { maxReplicas: '2' },
      })
    ).status,
    201,
  )
  assert.is((await http(e, 'POST', DEPLOYMENTS, deployment('p1', 2))).status, 201)
  const over = await http(e, 'POST', DEPLOYMENTS, deployment('p2', 3))
  assert.is(over.status, 422)
  assert.match(over.body.message, 'denied request: at most 2 replicas')
  await done()
})

test('DELETE is admitted by policies too; failurePolicy Fail denies on an evaluation error, Ignore does not', async () => {
  const del = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['configmaps'] }]
  const done = await policy('keep', {
    matchConstraints: { resourceRules: del },
    validations: [{ expression: "oldObject.metadata.name != 'kept'" }],
  })
  await http(e, 'POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept' } })
  const r = await http(e, 'DELETE', '/api/v1/namespaces/default/configmaps/kept')
  assert.is(r.status, 422)
  assert.match(r.body.message, `configmaps "kept" is forbidden: ValidatingAdmissionPolicy 'keep'`)
  await done()
  const failing = await policy('broken', { validations: [{ expression: 'object.spec.nope > 1' }] })
  const broken = await http(e, 'POST', DEPLOYMENTS, deployment('b1', 1))
  assert.is(broken.status, 422)
  assert.match(broken.body.message, "expression 'object.spec.nope > 1' resulted in error")
  await failing()
  const ignoring = await policy('broken-ignored', { failurePolicy: 'Ignore', validations: [{ expression: 'object.spec.nope > 1' }] })
  assert.is((await http(e, 'POST', DEPLOYMENTS, deployment('b2', 1))).status, 201)
  await ignoring()
})

test.run()
