// The figures in the docs are the committed benchmark results: every `<!-- bench:... -->` block in
// docs/*.md and README.md is what `npm run bench:docs` renders from bench/results/*.json.

import { readFileSync } from 'node:fs'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { docFiles, loadResults, renderBlock, renderDoc } from '../scripts/bench-docs.ts'
import type { ResultsFile } from '../bench/lib/types.ts'

test('every bench block in the docs matches the committed results (else: npm run bench:docs)', () => {
  const results = loadResults()
  const stale: string[] = []
  let blocks = 0
  for (const file of docFiles()) {
    const text = readFileSync(file, 'utf8')
    blocks += (text.match(/<!-- bench:/g) ?? []).length
    for (const c of renderDoc(text, results).changed) stale.push(`${file}: ${c}`)
  }
  assert.ok(blocks > 0, 'the docs have bench blocks')
  assert.equal(stale, [])
})

const sample: ResultsFile = {
  suite: 's',
  node: 'v20',
  quick: false,
  commit: 'abc1234',
  date: '2026-01-02T03:04:05.000Z',
  results: [
    { name: 'A_1', unit: 'objects/s', value: 1500, baseline: 'b', baselineValue: 1000, ratio: 1.5 },
    { name: 'A_2', unit: 'objects/s', value: 500, baseline: 'b', baselineValue: 1000, ratio: 0.5 },
    { name: 'M', unit: 'bytes/object', value: 120, baseline: null, baselineValue: null, ratio: null },
  ],
}
const results = new Map([['s', sample]])

test('a block renders the selected results in selector order, with the run it came from', () => {
  const out = renderBlock('s', ['M', 'A_*'], results)
  const rows = out.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| case') && !l.startsWith('| ---'))
  assert.equal(rows, [
    '| M | 120 | bytes/object | - | - | - |',
    '| A_1 | 1,500 | objects/s | b | 1,000 | 1.50 |',
    '| A_2 | 500 | objects/s | b | 1,000 | 0.50 |',
  ])
  assert.match(out, 'bench/results/s.json` (full run at abc1234, 2026-01-02 03:04 UTC')
})

test('goals say met, or how far off', () => {
  const out = renderBlock('s', ['A_1>=1000', 'A_2.ratio>=1', 'M<=100'], results)
  assert.match(out, '| A_1 (objects/s) | 1,500 | >= 1,000 | met |')
  assert.match(out, '| A_2: ratio vs b | 0.50 | >= 1 | not met: 0.50x of the goal |')
  assert.match(out, '| M (bytes/object) | 120 | <= 100 | not met: 1.20x the goal |')
})

test('a marker naming no result, or an unknown suite, is an error, not an empty table', () => {
  assert.throws(() => renderBlock('s', ['Nope_*'], results), /no result matches/)
  assert.throws(() => renderBlock('other', [], results), /no bench\/results\/other.json/)
  assert.throws(() => renderBlock('s', ['A_1', 'A_2>=1'], results), /not both/)
})

test('renderDoc replaces only what is between the markers and reports the stale blocks', () => {
  const doc = 'intro\n<!-- bench:s A_1 -->\nold figures\n<!-- /bench -->\noutro\n'
  const r = renderDoc(doc, results)
  assert.equal(r.changed, ['<!-- bench:s A_1 -->'])
  assert.ok(r.text.startsWith('intro\n<!-- bench:s A_1 -->\n| case'))
  assert.ok(r.text.endsWith('<!-- /bench -->\noutro\n'))
  assert.equal(renderDoc(r.text, results).changed, [])
})

test.run()
