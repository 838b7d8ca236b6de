// JSON Patch (RFC 6902) against the public json-patch test suite (npm json-patch-test-suite: tests.json
// and spec_tests.json, every enabled case), and JSON merge patch against RFC 7386's Appendix A.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { jsonPatch, mergePatch } from '../src/patch.ts'

interface Case {
  comment?: string
  doc: unknown
  patch: unknown
  expected?: unknown
  error?: string
  disabled?: boolean
}
const require = createRequire(import.meta.url)
const suite = (file: string): Case[] => JSON.parse(readFileSync(require.resolve(`json-patch-test-suite/${file}`), 'utf8'))

for (const file of ['tests.json', 'spec_tests.json']) {
  test(`json-patch-test-suite ${file}: every enabled case`, () => {
    const cases = suite(file).filter((c) => !c.disabled)
    assert.ok(cases.length > 10, 'the suite was read')
    for (const [i, c] of cases.entries()) {
      const what = `${file} #${i} ${c.comment ?? c.error ?? ''}: ${JSON.stringify(c.patch)}`
      if (c.error !== undefined) {
        assert.throws(() => jsonPatch(c.doc, c.patch), undefined, `${what} should fail (${c.error})`)
        continue
      }
      const doc = structuredClone(c.doc)
      const out = jsonPatch(c.doc, c.patch)
      assert.equal(c.doc, doc, `${what}: the input is not mutated`)
      if ('expected' in c) assert.equal(out, c.expected, what)
    }
  })
}

// RFC 7386, Appendix A: [original, patch, result]
const RFC7386: Array<[unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [
    ['a', 'b'],
    ['c', 'd'],
    ['c', 'd'],
  ],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
]

test('JSON merge patch: RFC 7386 Appendix A', () => {
  for (const [i, [original, patch, result]] of RFC7386.entries()) {
    const before = structuredClone(original)
    assert.equal(mergePatch(original, patch), result, `example ${i + 1}: ${JSON.stringify(original)} + ${JSON.stringify(patch)}`)
    assert.equal(original, before, `example ${i + 1}: the input is not mutated`)
  }
})

test.run()
