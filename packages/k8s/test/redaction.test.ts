// The Kubernetes rules of statedb's redaction (src/redaction.ts): core v1 Secrets at any depth, and the
// manifest kubectl keeps in the last-applied-configuration annotation, with nothing but this package loaded.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { redactSecrets } from '@statewright/statedb'
import '../src/index.ts'

test("a core v1 Secret at any depth loses data and stringData; another group's Secret kind does not", () => {
  const out: any = redactSecrets('t', { wrap: { object: { apiVersion: 'v1', kind: 'Secret', data: { a: 'x' }, metadata: { name: 'n' } } } })
  assert.equal(out.wrap.object, { apiVersion: 'v1', kind: 'Secret', data: '(redacted)', metadata: { name: 'n' } })
  const other = { apiVersion: 'example.com/v1', kind: 'Secret', data: 'kept' }
  assert.is(redactSecrets('t', other), other)
})

test("a Secret's last-applied-configuration annotation (kubectl apply copies the data there) is redacted", () => {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 's',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"pw":"aHVudGVyMg=="}}', other: 'kept' },
    },
    data: { pw: 'aHVudGVyMg==' },
  }
  const out = redactSecrets('t', { wrap: secret }) as any
  assert.equal(out.wrap.metadata.annotations, {
    'kubectl.kubernetes.io/last-applied-configuration': '{"data":"(redacted)"}',
    other: 'kept',
  })
  assert.not.ok(JSON.stringify(out).includes('aHVudGVyMg=='))
  const broken = { ...secret, metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"pw":"aHVu' } } }
  assert.equal((redactSecrets('t', broken) as any).metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], '(redacted)')
})

test('a custom resource applied with kubectl apply: the Secret it embeds is redacted in the object and in its last-applied-configuration', () => {
  const embedded = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 'hunter2' } }
  const cr = {
    apiVersion: 'example.com/v1',
    kind: 'Bundle',
    metadata: { name: 'b', annotations: {} as Record<string, string> },
    spec: { replicas: 2, template: embedded },
  }
  cr.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] = JSON.stringify({ ...cr, metadata: { name: 'b' } }) + '\n'
  const out = redactSecrets('t', cr) as any
  assert.not.ok(JSON.stringify(out).includes('hunter2'), JSON.stringify(out))
  assert.is(out.spec.template.stringData, '(redacted)')
  const applied = JSON.parse(out.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'])
  assert.equal(applied.spec, { replicas: 2, template: { ...embedded, stringData: '(redacted)' } }, 'the rest of the manifest is kept')
  assert.ok(
    cr.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'].includes('hunter2'),
    'the stored object is not touched',
  )
  // nothing secret in it: the object itself comes back, annotation and all
  const plain = { kind: 'Bundle', metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"spec":{"a":1}}' } } }
  assert.is(redactSecrets('t', plain), plain)
  const junk = { kind: 'Bundle', metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'not json' } } }
  assert.is(redactSecrets('t', junk), junk)
})

test.run()
