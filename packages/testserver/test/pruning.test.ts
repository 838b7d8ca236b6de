// Pruning by a structural schema, after apiextensions-apiserver's pkg/apiserver/schema/pruning
// algorithm_test.go (TestPrune; each test names its case, the schemas rewritten as CRD JSON, the
// checks ours). pruneAndDefault prunes at a CRD's root: apiVersion, kind and metadata stay there.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { pruneAndDefault } from '../src/pruning.ts'

const prune = (obj: unknown, schema: Record<string, any>) => {
  const r = pruneAndDefault(obj, schema)
  return { value: r.value, pruned: [...r.unknown].sort() }
}

test('TestPrune "object array object": unknown fields of items and objects go, each reported', () => {
  const schema = {
    type: 'object',
    properties: {
      array: { type: 'array', items: { type: 'object', properties: { a: {}, c: {} } } },
      specified: { type: 'object', properties: { a: {}, c: {} } },
    },
  }
  const obj = { array: [{ a: 1 }, { b: 1 }, { a: 1, b: 2, c: 3 }], unspecified: { a: 1 }, specified: { a: 1, b: 2, c: 3 } }
  assert.equal(prune(obj, schema), {
    value: { array: [{ a: 1 }, {}, { a: 1, c: 3 }], specified: { a: 1, c: 3 } },
    pruned: ['array[1].b', 'array[2].b', 'specified.b', 'unspecified'],
  })
})

test('TestPrune "nested x-kubernetes-preserve-unknown-fields": kept where marked, not inherited by properties or additionalProperties', () => {
  const obj = () => ({
    unspecified: 'bar',
    alpha: 'abc',
    unspecifiedObject: { unspecified: 'bar' },
    pruning: {
      unspecified: 'bar',
      unspecifiedObject: { unspecified: 'bar' },
      pruning: { unspecified: 'bar' },
      preserving: { unspecified: 'bar' },
    },
    preserving: { unspecified: 'bar', pruning: { unspecified: 'bar' }, preservingUnknownType: [{ foo: true }, { bar: true }] },
    preservingAdditionalProperties: { foo: { specified: { unspecified: 'bar' }, unspecified: 'bar' } },
  })
  const schema = {
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
    properties: {
      alpha: { type: 'string' },
      pruning: {
        type: 'object',
        properties: { preserving: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, pruning: { type: 'object' } },
      },
      preserving: {
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        properties: { pruning: { type: 'object' }, preservingUnknownType: { 'x-kubernetes-preserve-unknown-fields': true } },
      },
      preservingAdditionalProperties: {
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        additionalProperties: { type: 'object', properties: { specified: { type: 'object' } } },
      },
    },
  }
  const { value, pruned } = prune(obj(), schema)
  assert.equal(value, {
    unspecified: 'bar',
    alpha: 'abc',
    unspecifiedObject: { unspecified: 'bar' },
    pruning: { pruning: {}, preserving: { unspecified: 'bar' } },
    preserving: { unspecified: 'bar', pruning: {}, preservingUnknownType: [{ foo: true }, { bar: true }] },
    preservingAdditionalProperties: { foo: { specified: {} } },
  })
  assert.equal(pruned, [
    'preserving.pruning.unspecified',
    'preservingAdditionalProperties.foo.specified.unspecified',
    'preservingAdditionalProperties.foo.unspecified',
    'pruning.pruning.unspecified',
    'pruning.unspecified',
    'pruning.unspecifiedObject',
  ])
})

test("x-kubernetes-preserve-unknown-fields on an array keeps its items' unknown fields (skipPrune), known ones still pruned (ECK's Logstash pipelines)", () => {
  const schema = {
    type: 'object',
    properties: {
      pipelines: {
        type: 'array',
        'x-kubernetes-preserve-unknown-fields': true,
        items: { type: 'object', properties: { known: { type: 'object' } } },
      },
      nested: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'array', items: { type: 'object' } } },
    },
  }
  const obj = { pipelines: [{ 'pipeline.id': 'main', known: { x: 1 } }], nested: [[{ a: 1 }]] }
  assert.equal(prune(obj, schema), {
    value: { pipelines: [{ 'pipeline.id': 'main', known: {} }], nested: [[{ a: 1 }]] },
    pruned: ['pipelines[0].known.x'],
  })
})

test('TestPrune "additionalProperties with bool": the keys stay, what is under them is pruned as with no schema', () => {
  const schema = { type: 'object', properties: { a: {}, c: { type: 'object', additionalProperties: false } } }
  const obj = { a: 1, b: 1, c: { a: 1, b: 2, c: { a: 1, apiVersion: 'unknown' } } }
  assert.equal(prune(obj, schema), { value: { a: 1, c: { a: 1, b: 2, c: {} } }, pruned: ['b', 'c.c.a', 'c.c.apiVersion'] })
  const open = { type: 'object', properties: { c: { type: 'object', additionalProperties: true } } }
  assert.equal(prune({ c: { k: 'v', m: { x: 1 }, l: [{ y: 1 }] } }, open), {
    value: { c: { k: 'v', m: {}, l: [{}] } },
    pruned: ['c.l[0].y', 'c.m.x'],
  })
})

test('TestPrune "x-kubernetes-embedded-resource": apiVersion, kind and metadata of an embedded object stay', () => {
  const schema = {
    type: 'object',
    properties: {
      template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object', properties: { a: {} } } } },
    },
  }
  const obj = {
    apiVersion: 'x/v1',
    kind: 'X',
    metadata: { name: 'n' },
    template: { apiVersion: 'v1', kind: 'Pod', metadata: { labels: { a: 'b' } }, spec: { a: 1, b: 2 }, junk: 1 },
  }
  assert.equal(prune(obj, schema), {
    value: {
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'n' },
      template: { apiVersion: 'v1', kind: 'Pod', metadata: { labels: { a: 'b' } }, spec: { a: 1 } },
    },
    pruned: ['template.junk', 'template.spec.b'],
  })
})

test.run()
