// CRD versions and conversion: customKind(...).withVersion's CRD, the hub-and-spoke converter
// (randomized round trips), the Manager's HTTPS /convert driven by posting ConversionReviews (with
// fault cases) and the manifests. Tests marked "follows" port controller-runtime's
// pkg/webhook/conversion/conversion_test.go scenarios (ExternalJob v1, v2 the hub, v3).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { Type } from '@sinclair/typebox'
import type { KubeObject, ResourceRef } from '@statewright/k8s'
import { ConfigError, ConversionError, Manager } from '@statewright/controller'
import { customKind, type CustomObject } from '@statewright/controller/crd'
import { ExternalJob, RETRIES_ANNOTATION } from './conversion-kind.ts'

type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false
const G = 'jobs.example.com'
const job = (version: string, spec: object, extra: Partial<KubeObject> = {}): KubeObject => ({
  apiVersion: `${G}/${version}`,
  kind: 'ExternalJob',
  metadata: { namespace: 'default', name: 'obj-1', uid: 'u-1', resourceVersion: '7', generation: 1 },
  spec,
  ...extra,
})
const convert = (obj: KubeObject, to: string) => ExternalJob.conversion!.convert(obj, `${G}/${to}`)
const throws = (fn: () => unknown): Error => {
  try {
    fn()
  } catch (err) {
    return err as Error
  }
  throw new Error('expected a throw')
}

/** Compiled, never run: each version's objects are typed. */
export function typeChecks(m: Manager) {
  const v1: ResourceRef<{ spec: { runAt: string } }> = ExternalJob.version('v1')
  const v3 = m.watch(ExternalJob.version('v3'))
  const at: (o: NonNullable<ReturnType<typeof v3.get>>) => string = (o) => o.spec.deferredAt
  const hub = ExternalJob.version('v2')
  const same: Equals<typeof hub, ResourceRef<CustomObject<any, any>>> = false
  // @ts-expect-error no such version
  ExternalJob.version('v9')
  // @ts-expect-error the hub's spec has `a`, a string, not the number toHub gives
  customKind({ group: G, kind: 'T', spec: Type.Object({ a: Type.String() }) }).withVersion('v2', {
    spec: Type.Object({ b: Type.Number() }),
    toHub: (t) => ({ ...t, spec: { a: t.spec.b } }),
    fromHub: (t) => ({ ...t, spec: { b: Number(t.spec.a) } }),
  })
  return [v1, at, same]
}

test('the CRD lists every version: one storage, served, deprecated with its warning, each its own schema; strategy Webhook v1', () => {
  const spec = ExternalJob.crd.spec as any
  assert.equal(
    spec.versions.map((v: any) => [v.name, v.storage, v.served, v.deprecated ?? false]),
    [
      ['v2', true, true, false],
      ['v1', false, true, true],
      ['v3', false, true, false],
      ['v2beta1', false, true, false],
    ],
  )
  assert.is(spec.versions[1].deprecationWarning, 'jobs.example.com/v1 ExternalJob is deprecated; use v2')
  assert.equal(Object.keys(spec.versions[1].schema.openAPIV3Schema.properties.spec.properties), ['runAt'])
  assert.equal(Object.keys(spec.versions[2].schema.openAPIV3Schema.properties.spec.properties), ['deferredAt', 'retries'])
  assert.equal(spec.versions[3].schema, spec.versions[0].schema, 'sameSchemaAsHub has the hub schema')
  assert.equal(spec.conversion, { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'] } })
  assert.equal(ExternalJob.versions, ['v2', 'v1', 'v3', 'v2beta1'])
  assert.is(ExternalJob.storageVersion, 'v2')
  assert.is(ExternalJob.version('v3').apiVersion, `${G}/v3`)
  assert.is(ExternalJob.version('v2'), ExternalJob)
})

// follows IsConvertible "should return false for a non convertible type" (one version) and the
// multi-version built-in case (no conversion implementation): strategy None, the API server renames
test('one version has no conversion; versions of the same schemas convert with strategy None', () => {
  const one = customKind({ group: G, kind: 'Plain', spec: Type.Object({ a: Type.String() }) })
  assert.is(one.conversion, undefined)
  assert.is((one.crd.spec as any).conversion, undefined)
  const renamed = one.withVersion('v1beta1', { sameSchemaAsHub: true, deprecated: true })
  assert.equal((renamed.crd.spec as any).conversion, { strategy: 'None' })
  assert.is(renamed.conversion!.strategy, 'None')
  const o = { apiVersion: `${G}/v1beta1`, kind: 'Plain', metadata: { name: 'p' }, spec: { a: 'x' } }
  assert.equal(renamed.conversion!.convert(o, `${G}/v1`), { ...o, apiVersion: `${G}/v1` })
})

// follows NewHubSpokeConverter "should return error if same spoke is specified twice" and "if a
// converter is missing" (the GroupKind and scheme cases cannot happen: a version belongs to its kind)
test('a version declared twice, without both conversions, or with a bad name is a ConfigError naming it', () => {
  const base = customKind({ group: G, kind: 'T', spec: Type.Object({ a: Type.String() }) })
  const v2 = { spec: Type.Object({ a: Type.String() }), toHub: (t: any) => t, fromHub: (t: any) => t }
  const twice = throws(() => base.withVersion('v2', v2).withVersion('v2', v2))
  assert.instance(twice, ConfigError)
  assert.match(twice.message, 'customKind T: version v2 is declared twice')
  const missing = throws(() => base.withVersion('v2', { spec: v2.spec, toHub: v2.toHub } as never))
  assert.match(missing.message, 'version v2: give both toHub and fromHub')
  assert.match(throws(() => base.withVersion('v1', { sameSchemaAsHub: true })).message, 'version v1 is declared twice')
  assert.match(throws(() => base.withVersion('2', v2)).message, 'version must be like v1')
  assert.match(throws(() => customKind({ group: G, kind: 'T', version: 'one', spec: v2.spec })).message, 'not "one"')
  assert.match(
    throws(() => base.withVersion('v2', { spec: Type.Object({ a: Type.Any() }), toHub: v2.toHub, fromHub: v2.fromHub })).message,
    'T v2: spec.a',
  )
  assert.match(throws(() => base.version('v7' as never)).message, 'no version "v7" (it has v1)')
})

// follows "should convert spoke to hub successfully"
test('spoke to hub', () => {
  assert.equal(convert(job('v1', { runAt: 'every 2 seconds' }), 'v2'), job('v2', { scheduleAt: 'every 2 seconds' }))
})

// follows "should convert hub to spoke successfully"
test('hub to spoke', () => {
  assert.equal(convert(job('v2', { scheduleAt: 'every 2 seconds' }), 'v1'), job('v1', { runAt: 'every 2 seconds' }))
})

// follows "should convert spoke to spoke successfully"
test('spoke to spoke through the hub', () => {
  assert.equal(convert(job('v1', { runAt: 'every 2 seconds' }), 'v3'), job('v3', { deferredAt: 'every 2 seconds' }))
  assert.equal(convert(job('v2beta1', { scheduleAt: 'x', retries: 2 }), 'v1').metadata.annotations, { [RETRIES_ANNOTATION]: '2' })
})

// differs from "should return error when dest/src objects are of same type": kube-apiserver sends only
// objects that need converting, and returning one unchanged is the conversion's identity
test('an object already in the desired version is returned as it came, the converter not called', () => {
  const o = job('v1', { runAt: 'explode' })
  assert.is(convert(o, 'v1'), o)
})

// follows "should return error when dest/src objects belong to different API groups", "... does not
// have a hub defined" (an unknown version here) and "should return error on panic in conversion"
test('another group, an unknown version, a throwing or a metadata-changing conversion: ConversionError naming object and versions', () => {
  const group = throws(() => ExternalJob.conversion!.convert(job('v1', { runAt: 'x' }), 'jobss.example.org/v2'))
  assert.instance(group, ConversionError)
  assert.is(
    group.message,
    'ExternalJob default/obj-1 from jobs.example.com/v1 to jobss.example.org/v2: the desired apiVersion is not in group jobs.example.com',
  )
  assert.match(
    throws(() => convert(job('v1', { runAt: 'x' }), 'v9')).message,
    'the desired apiVersion is of version "v9", which ExternalJob does not have (v2, v1, v3, v2beta1)',
  )
  assert.match(
    throws(() => convert(job('v0', { runAt: 'x' }), 'v2')).message,
    'from jobs.example.com/v0 to jobs.example.com/v2: the object is of version "v0"',
  )
  const boom = throws(() => convert(job('v1', { runAt: 'explode' }), 'v3'))
  assert.is(
    boom.message,
    'ExternalJob default/obj-1 from jobs.example.com/v1 to jobs.example.com/v3: v1 toHub failed: runAt "explode" cannot be converted',
  )
  const meddler = customKind({ group: G, kind: 'M', spec: Type.Object({ a: Type.String() }) }).withVersion('v2', {
    spec: Type.Object({ a: Type.String() }),
    toHub: (t) => ({ ...t, metadata: { ...t.metadata, name: 'renamed', labels: { ok: 'yes' } } }),
    fromHub: (t) => ({ ...t, metadata: { ...t.metadata, annotations: { fine: 'yes' } } }),
  })
  const m = { apiVersion: `${G}/v2`, kind: 'M', metadata: { name: 'm', namespace: 'ns' }, spec: { a: 'x' } }
  assert.is(
    throws(() => meddler.conversion!.convert(m, `${G}/v1`)).message,
    'M ns/m from jobs.example.com/v2 to jobs.example.com/v1: the conversion changed metadata.name; a conversion may change labels and annotations only',
  )
  assert.equal(meddler.conversion!.convert({ ...m, apiVersion: `${G}/v1` }, `${G}/v2`).metadata.annotations, { fine: 'yes' })
  const wrongKind = throws(() => convert({ ...job('v1', { runAt: 'x' }), kind: 'Other' }, 'v2'))
  assert.match(wrongKind.message, `the object's kind is "Other", not ExternalJob`)
})

const text = fc.string({ maxLength: 12 })
const meta = fc.record(
  {
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/),
    namespace: fc.constantFrom('default', 'team-a'),
    uid: fc.uuid(),
    resourceVersion: fc.nat().map(String),
    generation: fc.nat(),
    labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), text, { minKeys: 1, maxKeys: 3 }),
    annotations: fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), text, { minKeys: 1, maxKeys: 3 }),
  },
  { requiredKeys: ['name', 'namespace', 'uid', 'resourceVersion', 'generation'] },
)
/** As the objects come to the webhook: parsed JSON (fast-check's records have no prototype). */
const asJson = (o: KubeObject): KubeObject => JSON.parse(JSON.stringify(o))
const maybe = <T>(arb: fc.Arbitrary<T>, key: string) => fc.option(arb, { nil: undefined }).map((v) => (v === undefined ? {} : { [key]: v }))
const v1Job = fc
  .record({ metadata: meta, runAt: text, status: fc.option(maybe(text, 'lastRun'), { nil: undefined }) })
  .map(({ metadata, runAt, status }) => asJson(job('v1', { runAt }, { metadata, ...(status ? { status } : {}) })))
const v2Job = fc
  .record({
    metadata: meta,
    at: text,
    retries: maybe(fc.nat(), 'retries'),
    status: fc.option(maybe(text, 'lastRunAt'), { nil: undefined }),
  })
  .map(({ metadata, at, retries, status }) =>
    asJson(job('v2', { scheduleAt: at, ...retries }, { metadata, ...(status ? { status } : {}) })),
  )
const v3Job = v2Job.map((j) => convert(j, 'v3'))

test('randomized round trips spoke -> hub -> spoke and hub -> spoke -> hub equal the input; v1 keeps retries in an annotation', () => {
  const back = (o: KubeObject, via: string) => convert(convert(o, via), String(o.apiVersion).split('/')[1]!)
  fc.assert(fc.property(v1Job, (j) => assert.equal(back(j, 'v2'), j)))
  fc.assert(fc.property(v1Job, (j) => assert.equal(back(j, 'v3'), j)))
  fc.assert(fc.property(v3Job, (j) => assert.equal(back(j, 'v1'), j)))
  fc.assert(
    fc.property(v2Job, (j) => {
      const old = convert(j, 'v1')
      assert.is(old.metadata.annotations?.[RETRIES_ANNOTATION], (j.spec as any).retries?.toString(), 'the lossy field is annotated')
      assert.equal(convert(old, 'v2'), j, 'and restored')
      assert.equal(back(j, 'v3'), j)
    }),
  )
})

test('the converter never changes its input', () => {
  fc.assert(
    fc.property(v2Job, fc.constantFrom('v1', 'v3', 'v2beta1'), (j, to) => {
      const copy = structuredClone(j)
      convert(j, to)
      assert.equal(j, copy)
    }),
  )
})

test.run()
