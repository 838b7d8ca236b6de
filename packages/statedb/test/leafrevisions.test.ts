// Trees that carry revisions (the primary index keeps each object's revision beside it in the leaf,
// ./src/btree.ts): every operation that moves a value moves its revision, against a plain Map model.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, lastKey, MAX, MIN, treeRevision, type Branch, type Leaf, type Tree } from '../src/btree.ts'
import { deleteSortedPresent } from '../src/bulkdelete.ts'
import { ReverseTreeIterator } from '../src/reverse.ts'
import { validateTree } from '../src/treecheck.ts'
import { treeEach, TreeIterator } from '../src/treeiterator.ts'
import { TreeWriter } from '../src/treewriter.ts'

type Model = Map<number, [string, number]>

/** Every (key, value, revision) of a tree, by the iterator, the reverse iterator and the walk; asserts they agree. */
function contents(t: Tree<number, string>): Array<[number, string, number]> {
  const out: Array<[number, string, number]> = []
  const it = new TreeIterator(t.root, undefined)
  for (const v of it) out.push([it.key!, v, it.revision])
  const back: Array<[string, number]> = []
  const rit = new ReverseTreeIterator(t.root, undefined)
  for (const v of rit) back.push([v, rit.revision])
  assert.equal(
    back.reverse(),
    out.map(([, v, r]) => [v, r]),
    'reverse iteration',
  )
  const walked: Array<[string, number]> = []
  treeEach(t.root, (v, r) => walked.push([v, r]))
  assert.equal(
    walked,
    out.map(([, v, r]) => [v, r]),
    'treeEach',
  )
  return out
}

const expected = (m: Model): Array<[number, string, number]> => [...m.entries()].sort((a, b) => a[0] - b[0]).map(([k, [v, r]]) => [k, v, r])

test('sets, guarded sets, deletes and bulk deletes move revisions with their values; published trees stay as they were', () => {
  const op = fc.oneof(
    fc.tuple(fc.constant('set' as const), fc.integer({ min: 0, max: 300 })),
    fc.tuple(fc.constant('cas' as const), fc.integer({ min: 0, max: 300 })),
    fc.tuple(fc.constant('del' as const), fc.integer({ min: 0, max: 300 })),
    fc.tuple(fc.constant('bulk' as const), fc.integer({ min: 1, max: 6 })),
  )
  fc.assert(
    fc.property(fc.array(fc.array(op, { maxLength: 150 }), { minLength: 1, maxLength: 10 }), (batches) => {
      let tree: Tree<number, string> = emptyTree(true)
      const model: Model = new Map()
      let rev = 0
      const published: Array<[Tree<number, string>, Model]> = []
      for (const batch of batches) {
        const w = new TreeWriter(tree)
        for (const [kind, k] of batch) {
          const before = model.get(k)
          if (kind === 'set') {
            rev++
            assert.is(w.set(k, `v${rev}`, undefined, rev), before?.[0])
            if (before) assert.is(w.oldRevision, before[1])
            model.set(k, [`v${rev}`, rev])
          } else if (kind === 'cas') {
            // Writes only when the stored revision is even: the guard sees the stored revision.
            let seen = -2
            const old = w.set(k, `c${rev + 1}`, (_, r) => ((seen = r), r >= 0 && r % 2 === 0), rev + 1)
            assert.is(seen, before ? before[1] : -1)
            assert.is(old, before?.[0])
            if (before && before[1] % 2 === 0) model.set(k, [`c${++rev}`, rev])
            assert.is(w.rejected, !(before && before[1] % 2 === 0))
          } else if (kind === 'del') {
            assert.is(w.delete(k), before?.[0])
            if (before) assert.is(w.oldRevision, before[1])
            model.delete(k)
          } else {
            // Every k-th key at once (bulkdelete.ts compacts leaves and repairs branches).
            const keys = [...model.keys()].sort((a, b) => a - b).filter((_, i) => i % k === 0)
            deleteSortedPresent(w, keys)
            for (const key of keys) model.delete(key)
          }
        }
        tree = w.publish()
        validateTree(tree, 'tree')
        published.push([tree, new Map(model)])
      }
      for (const [t, m] of published) {
        validateTree(t, 'old tree')
        assert.equal(contents(t), expected(m))
        for (let k = 0; k <= 300; k += 7) assert.is(treeRevision(t.root, k), m.get(k)?.[1] ?? -1)
      }
    }),
    { numRuns: 60 },
  )
})

test('appends, splits, merges and clear keep revisions beside their values', () => {
  const w = new TreeWriter<number, string>(emptyTree(true))
  for (let k = 1; k <= 2000; k++) w.append(k, `a${k}`, k * 10)
  w.seal()
  for (let k = 1; k <= 2000; k += 3) w.set(k, `s${k}`, undefined, k * 10 + 1)
  const t = w.publish()
  validateTree(t, 'appended')
  const got = contents(t)
  assert.is(got.length, 2000)
  for (const [k, v, r] of got) assert.equal([v, r], k % 3 === 1 ? [`s${k}`, k * 10 + 1] : [`a${k}`, k * 10])
  // Shrink to a few keys one at a time: leaves merge and borrow.
  const d = new TreeWriter(t)
  for (let k = 1; k <= 1990; k++) d.deletePresent(k)
  const small = d.publish()
  validateTree(small, 'shrunk')
  assert.equal(
    contents(small),
    [1991, 1992, 1993, 1994, 1995, 1996, 1997, 1998, 1999, 2000].map((k) =>
      k % 3 === 1 ? [k, `s${k}`, k * 10 + 1] : [k, `a${k}`, k * 10],
    ),
  )
  assert.is(contents(t).length, 2000, 'the published tree is untouched')
  d.clear()
  d.set(5, 'x', undefined, 7)
  assert.equal(contents(d.publish()), [[5, 'x', 7]])
})

test('random inserts then random deletes down to a few keys (splits, merges, borrowing both ways) keep revisions beside their values', () => {
  let seed = 7
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n)
  const model: Model = new Map()
  let tree: Tree<number, string> = emptyTree(true)
  let rev = 0
  for (let round = 0; round < 4; round++) {
    const w = new TreeWriter(tree)
    for (let i = 0; i < 1500; i++) {
      const k = next(5000)
      w.set(k, `v${++rev}`, undefined, rev)
      model.set(k, [`v${rev}`, rev])
    }
    tree = w.publish()
    validateTree(tree, 'grown')
    assert.equal(contents(tree), expected(model))
  }
  const snapshot = new Map(model)
  const grown = tree
  while (model.size > 50) {
    const w = new TreeWriter(tree)
    const keys = [...model.keys()]
    for (let i = 0; i < 400 && model.size > 50; i++) {
      const k = keys[next(keys.length)]!
      if (!model.has(k)) continue
      assert.is(w.delete(k), model.get(k)![0])
      assert.is(w.oldRevision, model.get(k)![1])
      model.delete(k)
    }
    tree = w.publish()
    validateTree(tree, 'shrinking')
    assert.equal(contents(tree), expected(model))
  }
  assert.equal(contents(grown), expected(snapshot), 'the grown tree is untouched')
})

for (const which of ['middle', 'first'] as const)
  for (const how of ['one by one', 'at once'] as const)
    test(`the ${which} leaf, run short (removed ${how}), borrows from a full neighbour: revisions move with their values`, () => {
      const w = new TreeWriter<number, string>(emptyTree(true))
      const model: Model = new Map()
      const put = (k: number, r: number) => {
        w.set(k, `v${k}`, undefined, r)
        model.set(k, [`v${k}`, r])
      }
      for (let k = 1; k <= 200; k++) put(k, k)
      const leaves = () => (w.root as Branch<number, string>).children
      // Fill the short leaf's neighbours to MAX (between their keys): no merge can take it in.
      const short = which === 'middle' ? 1 : 0
      let r = 1000
      for (const n of [short - 1, short + 1]) {
        if (n < 0) continue
        const lo = n === 0 ? 0 : lastKey(leaves()[n - 1]!)
        for (let i = 1; leaves()[n]!.keys.length < MAX; i++) put(lo + i / 1000, ++r)
      }
      const count = leaves().length
      const keys = leaves()[short]!.keys.slice()
      const gone = keys.slice(0, keys.length - (MIN - 1)) // one below MIN left
      if (how === 'one by one')
        for (const k of gone) {
          assert.is(w.delete(k), `v${k}`)
          assert.is(w.oldRevision, model.get(k)![1])
          model.delete(k)
        }
      else {
        deleteSortedPresent(w, gone)
        for (const k of gone) model.delete(k)
      }
      assert.is(leaves().length, count, 'borrowed: no leaf merged away')
      assert.ok(leaves()[short]!.keys.length >= MIN, 'the short leaf refilled')
      const t = w.publish()
      validateTree(t, which)
      assert.equal(contents(t), expected(model))
    })

test('the tree check catches a revision array out of step with its leaf, and a tree where only some leaves carry revisions', () => {
  const w = new TreeWriter<number, string>(emptyTree(true))
  for (let k = 1; k <= 200; k++) w.set(k, `v${k}`, undefined, k)
  const t = w.publish()
  validateTree(t, 'good')
  const firstLeaf = (tree: Tree<number, string>): Leaf<number, string> => {
    let n = tree.root
    while (!n.leaf) n = n.children[0]!
    return n
  }
  const leaf = firstLeaf(t)
  const revs = leaf.revs!
  leaf.revs = revs.slice(1)
  assert.throws(() => validateTree(t, 'short'), /keys and \d+ revisions/)
  leaf.revs = revs.map(() => 0)
  assert.throws(() => validateTree(t, 'zero'), /holds revision 0/)
  leaf.revs = revs
  let last = t.root
  while (!last.leaf) last = last.children[last.children.length - 1]!
  last.revs = undefined
  assert.throws(() => validateTree(t, 'mixed'), /some leaves carry revisions and some do not/)
})

test.run()
