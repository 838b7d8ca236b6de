// Trees that carry revisions (the primary index keeps each object's revision beside it in the leaf,
// ./src/btree.ts): every operation that moves a value moves its revision, against a plain Map model.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, treeRevision, type Leaf, type Tree } from '../src/btree.ts'
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

test('a short leaf borrows from a full left neighbour (and a full right one): revisions move with their values', () => {
  for (const side of ['left', 'right'] as const) {
    // Appends fill leaves of 36 (1..36, 37..72, 73..96); twelve inserts fill one neighbour to 48.
    const w = new TreeWriter<number, string>(emptyTree(true))
    const model: Model = new Map()
    const put = (k: number, r: number) => {
      w.set(k, `v${k}`, undefined, r)
      model.set(k, [`v${k}`, r])
    }
    for (let k = 1; k <= 96; k++) put(k, k)
    // A leaf borrows from its left neighbour when it has one: the middle leaf (from the full first
    // one), else the first leaf (from the full middle one).
    const full = side === 'left' ? 0 : 36
    for (let i = 1; i <= 12; i++) put(full + i + 0.5, 1000 + i)
    validateTree(w.publish(), 'filled')
    // The short leaf loses 25 keys: 11 left, one below the minimum, so it borrows.
    const short = side === 'left' ? 37 : 1
    for (let k = short; k < short + 25; k++) {
      assert.is(w.delete(k), `v${k}`)
      assert.is(w.oldRevision, k)
      model.delete(k)
    }
    const t = w.publish()
    validateTree(t, side)
    assert.equal(contents(t), expected(model))
  }
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
