// The Kubernetes CEL lists library (isSorted, sum, min, max, indexOf, lastIndexOf), checked against
// the examples k8s.io/apiserver/pkg/cel/library/lists.go documents, and on a CRD's list fields.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { celCauses, loadCel } from '../src/cel.ts'
import type { StatusCause } from '../src/status.ts'

test.before(() => loadCel())

/** The causes of one rule evaluated on `value` under `schema` (none: the rule held). */
function run(rule: string, value: unknown = {}, schema: Record<string, any> = { type: 'object' }): StatusCause[] {
  const out: StatusCause[] = []
  celCauses(value, undefined, { ...schema, 'x-kubernetes-validations': [{ rule }] }, '', out)
  return out
}

test('lists.go examples: each holds', () => {
  const hold = [
    '[1, 2, 3].isSorted()',
    "['a', 'b', 'b', 'c'].isSorted()",
    '![2.0, 1.0].isSorted()',
    '[1].isSorted()',
    '[].isSorted()',
    '[1, 3].sum() == 4',
    '[1.0, 3.0].sum() == 4.0',
    '[].sum() == 0',
    '[1, 3].min() == 1',
    '[1, 3].max() == 3',
    '[1].min() == 1',
    '([0] + [5, 2]).min() == 0',
    '[1, 2, 2, 3].indexOf(2) == 1',
    "['a', 'b', 'b', 'c'].lastIndexOf('b') == 2",
    '[1.0].indexOf(1.1) == -1',
    "[].indexOf('string') == -1",
  ]
  for (const rule of hold) assert.equal(run(rule), [], rule)
})

test('lists.go examples: [].min() is an error, reported as the rule failing with it', () => {
  const out = run('[].min() == 0')
  assert.is(out.length, 1)
  assert.match(String(out[0]!.message), 'min called on empty list')
})

test("on a CRD's fields: integers, numbers and strings from JSON", () => {
  const schema = {
    type: 'object',
    properties: {
      ports: { type: 'array', items: { type: 'integer' } },
      weights: { type: 'array', items: { type: 'number' } },
      names: { type: 'array', items: { type: 'string' } },
    },
  }
  const v = { ports: [80, 443, 8080], weights: [0.5, 1.5], names: ['b', 'a'] }
  assert.equal(run('self.ports.isSorted() && self.ports.max() == 8080 && self.ports.sum() == 8603', v, schema), [])
  assert.equal(run('self.weights.sum() == 2.0 && self.weights.min() == 0.5', v, schema), [])
  assert.equal(run("!self.names.isSorted() && self.names.indexOf('a') == 1", v, schema), [])
  const failed = run('self.names.isSorted()', v, schema)
  assert.equal(
    failed.map((c) => c.message),
    ['Invalid value: "object": failed rule: self.names.isSorted()'],
  )
})

test.run()
