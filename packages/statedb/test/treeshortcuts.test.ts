// TreeWriter's shortcuts. `set`'s two (a key above the tree appended to the open right edge; a
// replacement in the leaf of the last replacement) against the descent they skip: two writers, one
// with the shortcuts and one without, take the same random writes and must answer alike, build the
// same trees (keys, values, revisions, node for node) and agree with a Map. `deleteLater` (removals
// gathered until the next seal) against a Map, with every kind of read and write in between.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, MAX, MIN, type Branch, type Tree, type TreeNode } from '../src/btree.ts'
import { TreeIterator } from '../src/treeiterator.ts'
import { SET_SHORTCUTS, TreeWriter, type SetGuard } from '../src/treewriter.ts'
import { validateTree } from '../src/treecheck.ts'
import { deleteSortedPresent } from '../src/bulkdelete.ts'

type Op =
  | { op: 'above'; gap: number; n: number } // n keys above the tree, ascending
  | { op: 'set'; k: number } // insert or replace anywhere
  | { op: 'run'; from: number; n: number } // replace n present keys in order (a write-back)
  | { op: 'cas'; k: number; stale: boolean } // guarded: write only at the stored revision
  | { op: 'delete'; k: number }
  | { op: 'bulk'; from: number; n: number } // delete n present keys at once
  | { op: 'get'; k: number }
  | { op: 'publish' }

const KEYS = 800
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('above' as const), gap: fc.integer({ min: 1, max: 5 }), n: fc.integer({ min: 1, max: 120 }) }),
  fc.record({ op: fc.constant('set' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('run' as const), from: fc.nat(KEYS), n: fc.integer({ min: 1, max: 150 }) }),
  fc.record({ op: fc.constant('cas' as const), k: fc.nat(KEYS), stale: fc.boolean() }),
  fc.record({ op: fc.constant('delete' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('bulk' as const), from: fc.nat(KEYS), n: fc.integer({ min: 1, max: 100 }) }),
  fc.record({ op: fc.constant('get' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('publish' as const) }),
)

const shape = (n: TreeNode<number, string>): unknown =>
  n.leaf ? { k: n.keys, v: n.vals, r: n.revs } : { k: n.keys, c: n.children.map(shape) }

/** Runs `f` on the writer without shortcuts. */
function plain<T>(f: () => T): T {
  SET_SHORTCUTS.enabled = false
  try {
    return f()
  } finally {
    SET_SHORTCUTS.enabled = true
  }
}

test("set's shortcuts build the trees the descent builds and answer as it does", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 80, size: 'max' }), (ops) => {
      let fast = new TreeWriter<number, string>(emptyTree(true))
      let slow = new TreeWriter<number, string>(emptyTree(true))
      const model = new Map<number, { v: string; rev: number }>()
      const published: Array<[Tree<number, string>, Array<[number, string]>]> = []
      let rev = 0
      let top = -1
      const sorted = () => [...model.keys()].sort((a, b) => a - b)
      const set = (k: number, guard?: SetGuard<string>) => {
        const v = `v${++rev}`
        const a = fast.set(k, v, guard, rev)
        const b = plain(() => slow.set(k, v, guard, rev))
        assert.is(a, b, `set ${k}: old value`)
        assert.is(fast.oldRevision, slow.oldRevision, `set ${k}: old revision`)
        assert.is(fast.rejected, slow.rejected, `set ${k}: rejected`)
        const m = model.get(k)
        assert.is(a, m?.v, `set ${k}: the model's value`)
        if (!fast.rejected) {
          model.set(k, { v, rev })
          top = Math.max(top, k)
        }
      }
      for (const o of ops) {
        switch (o.op) {
          case 'above':
            for (let i = 0; i < o.n; i++) set(top + o.gap)
            break
          case 'set':
            set(o.k)
            break
          case 'run': {
            for (const k of sorted()
              .filter((k) => k >= o.from)
              .slice(0, o.n))
              set(k)
            break
          }
          case 'cas': {
            const want = (model.get(o.k)?.rev ?? -5) + (o.stale ? 1 : 0)
            set(o.k, (cur, r) => cur !== undefined && r === want)
            break
          }
          case 'delete':
            assert.is(
              fast.delete(o.k),
              plain(() => slow.delete(o.k)),
            )
            model.delete(o.k)
            break
          case 'bulk': {
            const keys = sorted()
              .filter((k) => k >= o.from)
              .slice(0, o.n)
            deleteSortedPresent(fast, keys)
            plain(() => deleteSortedPresent(slow, keys))
            for (const k of keys) model.delete(k)
            break
          }
          case 'get':
            assert.is(fast.get(o.k), model.get(o.k)?.v)
            break
          case 'publish': {
            const a = fast.publish()
            const b = slow.publish()
            validateTree(a, 'published with shortcuts')
            assert.equal(shape(a.root as TreeNode<number, string>), shape(b.root as TreeNode<number, string>))
            published.push([a, sorted().map((k) => [k, model.get(k)!.v])])
            // Half the time the next writes go through a new writer over the published tree.
            if (rev % 2 === 0) {
              fast = new TreeWriter(a)
              slow = new TreeWriter(b)
            }
            break
          }
        }
      }
      const a = fast.publish()
      const b = slow.publish()
      validateTree(a, 'final with shortcuts')
      validateTree(b, 'final without')
      assert.equal(shape(a.root as TreeNode<number, string>), shape(b.root as TreeNode<number, string>))
      assert.is(a.size, model.size)
      const it = new TreeIterator(a.root, undefined)
      const got: Array<[number, string]> = []
      for (let r = it.next(); !r.done; r = it.next()) got.push([it.key!, r.value])
      assert.equal(
        got,
        sorted().map((k) => [k, model.get(k)!.v]),
      )
      for (const [t, want] of published) {
        validateTree(t, 'earlier publish')
        const i2 = new TreeIterator(t.root, undefined)
        const g: Array<[number, string]> = []
        for (let r = i2.next(); !r.done; r = i2.next()) g.push([i2.key!, r.value])
        assert.equal(g, want)
      }
    }),
    { numRuns: 300 },
  )
})

for (const how of ['one by one', 'at once'] as const) {
  test(`a replacement after the leaf it last replaced in was merged away (deleted ${how}) goes to the tree, not to the lost leaf`, () => {
    // Replace in the last leaf, delete enough of it to merge it into its neighbour, replace again.
    const w = new TreeWriter<number, string>(emptyTree(true))
    for (let k = 0; k < 200; k++) w.set(k, 'a', undefined, k + 1)
    const t = w.publish()
    const leaves = () => (t.root as Branch<number, string>).children
    const last = leaves()[leaves().length - 1]!
    assert.ok(leaves()[leaves().length - 2]!.keys.length + MIN - 1 <= MAX, 'the last leaf merges into its neighbour')
    const x = new TreeWriter(t)
    x.set(199, 'b', undefined, 300) // the last replacement's leaf: the last one
    const gone = last.keys.slice(0, last.keys.length - (MIN - 1))
    if (how === 'one by one') for (const k of gone) x.delete(k)
    else deleteSortedPresent(x, gone)
    assert.is((x.root as Branch<number, string>).children.length, leaves().length - 1, 'merged')
    x.set(199, 'c', undefined, 301)
    x.set(198, 'd', undefined, 302)
    const out = x.publish()
    validateTree(out, 'after merge')
    assert.equal([...new TreeIterator(out.root, 198)], ['d', 'c'])
  })
}

test('deleteLater agrees with a Map whatever comes between; published trees stay as they were', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.record({ op: fc.constant('later' as const), from: fc.nat(KEYS), n: fc.integer({ min: 1, max: 90 }), shuffle: fc.boolean() }),
          fc.record({ op: fc.constant('set' as const), k: fc.nat(KEYS) }),
          fc.record({ op: fc.constant('above' as const), n: fc.integer({ min: 1, max: 60 }) }),
          fc.record({ op: fc.constant('delete' as const), k: fc.nat(KEYS) }),
          fc.record({ op: fc.constant('get' as const), k: fc.nat(KEYS) }),
          fc.record({ op: fc.constant('size' as const) }),
          fc.record({ op: fc.constant('iterate' as const) }),
          fc.record({ op: fc.constant('publish' as const) }),
        ),
        { minLength: 1, maxLength: 60, size: 'max' },
      ),
      (ops) => {
        let w = new TreeWriter<number, number>(emptyTree())
        const model = new Map<number, number>()
        const published: Array<[Tree<number, number>, number[]]> = []
        const sorted = () => [...model.keys()].sort((a, b) => a - b)
        const values = () => sorted().map((k) => model.get(k)!)
        let top = 0
        for (const o of ops) {
          if (o.op === 'later') {
            const keys = sorted()
              .filter((k) => k >= o.from)
              .slice(0, o.n)
            if (o.shuffle) keys.reverse()
            for (const k of keys) {
              w.deleteLater(k)
              model.delete(k)
            }
          } else if (o.op === 'set') {
            assert.is(w.set(o.k, -o.k), model.get(o.k))
            model.set(o.k, -o.k)
            top = Math.max(top, o.k)
          } else if (o.op === 'above') {
            for (let i = 0; i < o.n; i++) {
              w.set(++top, top)
              model.set(top, top)
            }
          } else if (o.op === 'delete') {
            assert.is(w.delete(o.k), model.get(o.k))
            model.delete(o.k)
          } else if (o.op === 'get') assert.is(w.get(o.k), model.get(o.k))
          else if (o.op === 'size') assert.is(w.size, model.size)
          else if (o.op === 'iterate') assert.equal([...new TreeIterator(w.root, undefined)], values())
          else {
            const t = w.publish()
            validateTree(t, 'published')
            published.push([t, values()])
            if (top % 2 === 0) w = new TreeWriter(t)
          }
        }
        const t = w.publish()
        validateTree(t, 'final')
        assert.is(t.size, model.size)
        assert.equal([...new TreeIterator(t.root, undefined)], values())
        for (const [p, want] of published) assert.equal([...new TreeIterator(p.root, undefined)], want)
      },
    ),
    { numRuns: 300 },
  )
})

test('carrying out gathered removals changes nothing a caller reads of the last write', () => {
  const w = new TreeWriter<number, string>(emptyTree(true))
  for (let k = 1; k <= 100; k++) w.set(k, 'a', undefined, k)
  w.deleteLater(50)
  w.set(10, 'b', undefined, 200) // seals first: 50 goes
  w.deleteLater(60)
  assert.is(w.oldRevision, 10)
  assert.is(w.get(60), undefined) // seals: 60 goes (one key: a single removal, which sets oldRevision)
  assert.is(w.oldRevision, 10)
  w.deleteLater(70)
  assert.throws(() => w.gatherIn([]), /pending/) // it would lose the removal
})

test('a key removed later and set again before the removal is carried out stays', () => {
  const w = new TreeWriter<number, number>(emptyTree())
  for (let k = 0; k < 100; k++) w.set(k, k)
  const x = new TreeWriter(w.publish())
  x.set(10, -10) // the last replacement's leaf holds 10 and 11
  x.deleteLater(11)
  assert.is(x.set(11, -11), undefined) // gone already, as far as anyone can tell
  assert.is(x.get(11), -11)
  assert.is(x.size, 100)
  validateTree(x.publish(), 'after')
})

test('a set (value = key) publishes leaves with one array for both; later writers never change it', () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.tuple(fc.boolean(), fc.nat(KEYS)), { maxLength: 150, size: 'max' }), { minLength: 1, maxLength: 8 }),
      (batches) => {
        let tree: Tree<number, number> = emptyTree()
        const model = new Set<number>()
        const published: Array<[Tree<number, number>, number[]]> = []
        for (const batch of batches) {
          const w = new TreeWriter(tree)
          w.keyIsValue = true
          for (const [del, k] of batch) {
            if (del) {
              if (model.has(k)) w.deleteLater(k)
              model.delete(k)
            } else {
              w.set(k, k)
              model.add(k)
            }
          }
          tree = w.publish()
          validateTree(tree, 'set')
          const leafs = (n: TreeNode<number, number>): Array<TreeNode<number, number>> => (n.leaf ? [n] : n.children.flatMap(leafs))
          for (const l of leafs(tree.root)) if (l.leaf && l.keys.length > 0) assert.ok(l.vals === (l.keys as unknown), 'one array')
          published.push([tree, [...model].sort((a, b) => a - b)])
        }
        for (const [t, want] of published) assert.equal([...new TreeIterator(t.root, undefined)], want)
      },
    ),
    { numRuns: 200 },
  )
})

test('a replacement after publish copies the leaf it last replaced in: the published tree keeps its value', () => {
  const w = new TreeWriter<number, string>(emptyTree(true))
  for (let k = 0; k < 100; k++) w.set(k, 'a', undefined, k + 1)
  w.set(50, 'b', undefined, 200) // the finger
  const t = w.publish()
  w.set(51, 'c', undefined, 201) // same leaf, now frozen
  assert.equal([...new TreeIterator(t.root, 50)].slice(0, 2), ['b', 'a'])
  assert.equal([...new TreeIterator(w.publish().root, 50)].slice(0, 2), ['b', 'c'])
})

test.run()
