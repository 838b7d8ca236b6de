// The persistent B+tree and the key encoding, against plain models.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, less, treeGet, type Tree, type TreeNode } from '../src/btree.ts'
import { treeEach, TreeIterator } from '../src/treeiterator.ts'
import { SET_SHORTCUTS, TreeWriter } from '../src/treewriter.ts'
import { validateTree } from '../src/treecheck.ts'
import { deleteSortedPresent } from '../src/bulkdelete.ts'
import { encodeKey, encodePrefix, KEY_SEPARATOR, type Key, type KeyPart } from '../src/encoding.ts'

test('random writes agree with a Map; every published tree stays as it was', () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 400 })), { maxLength: 120 }), { minLength: 1, maxLength: 12 }),
      (batches) => {
        let tree: Tree<number, string> = emptyTree()
        const model = new Map<number, string>()
        const published: Array<[Tree<number, string>, Map<number, string>]> = []
        for (const batch of batches) {
          const w = new TreeWriter(tree)
          for (const [del, k] of batch) {
            if (del) {
              assert.is(w.delete(k), model.get(k))
              model.delete(k)
            } else {
              assert.is(w.set(k, `v${k}.${batch.length}`), model.get(k))
              model.set(k, `v${k}.${batch.length}`)
            }
          }
          tree = w.publish()
          validateTree(tree, 'tree')
          published.push([tree, new Map(model)])
        }
        for (const [t, m] of published) {
          validateTree(t, 'old tree')
          const keys = [...m.keys()].sort((a, b) => a - b)
          assert.equal(
            [...new TreeIterator(t.root, undefined)],
            keys.map((k) => m.get(k)),
          )
          for (const from of [0, 7, 200, 401]) {
            assert.equal(
              [...new TreeIterator(t.root, from)],
              keys.filter((k) => k >= from).map((k) => m.get(k)),
            )
          }
          for (let k = 0; k <= 400; k += 13) assert.is(treeGet(t.root, k), m.get(k))
        }
      },
    ),
    { numRuns: 60 },
  )
})

test('the revision-index shape (delete the smallest, append a larger) rebalances in place and stays a valid tree; treeEach agrees with the iterator', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 400 }),
      fc.integer({ min: 1, max: 150 }),
      fc.integer({ min: 1, max: 6 }),
      (rows, batch, rounds) => {
        let tree: Tree<number, number> = emptyTree()
        const w0 = new TreeWriter(tree)
        for (let i = 0; i < rows; i++) w0.set(i, i)
        tree = w0.publish()
        let next = rows
        const published: Array<[Tree<number, number>, number[]]> = []
        for (let r = 0; r < rounds; r++) {
          const w = new TreeWriter(tree)
          for (let j = 0; j < batch; j++) {
            const smallest = new TreeIterator(w.root, undefined).next().value as number
            w.deletePresent(smallest)
            w.set(next, next)
            next++
          }
          tree = w.publish()
          validateTree(tree, 'revision shape')
          const want = Array.from({ length: rows }, (_, i) => next - rows + i)
          published.push([tree, want])
        }
        for (const [t, want] of published) {
          validateTree(t, 'old tree')
          assert.equal([...new TreeIterator(t.root, undefined)], want)
          const seen: number[] = []
          treeEach(t.root, (v) => seen.push(v))
          assert.equal(seen, want)
        }
      },
    ),
    { numRuns: 80 },
  )
})

test('deleting many sorted keys at once agrees with a Map and leaves a valid tree; published trees stay as they were', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 3000 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 3000 })), { minLength: 1, maxLength: 6 }),
      fc.integer(),
      (size, ranges, seed) => {
        const w0 = new TreeWriter<number, number>(emptyTree())
        // Keys inserted in a scrambled order, so node fill varies.
        const order = Array.from({ length: size }, (_, i) => (i * 7919 + (seed >>> 0)) % Math.max(size, 1))
        const model = new Map<number, number>()
        for (const k of order) {
          w0.set(k, k)
          model.set(k, k)
        }
        const first = w0.publish()
        validateTree(first, 'before')
        const w = new TreeWriter(first)
        const doomed = new Set<number>()
        for (const [a, b] of ranges) for (let k = Math.min(a, b); k <= Math.max(a, b); k += 1 + (seed & 3)) if (model.has(k)) doomed.add(k)
        const keys = [...doomed].sort((x, y) => x - y)
        deleteSortedPresent(w, keys)
        for (const k of keys) model.delete(k)
        const after = w.publish()
        validateTree(after, 'after')
        validateTree(first, 'first, untouched')
        assert.equal(
          [...new TreeIterator(first.root, undefined)],
          [...new Set(order)].sort((x, y) => x - y),
        )
        const want = [...model.keys()].sort((x, y) => x - y)
        assert.equal([...new TreeIterator(after.root, undefined)], want)
        assert.is(first.size, size === 0 ? 0 : new Set(order).size)
      },
    ),
    { numRuns: 300 },
  )
})

// The tree as data, owners left out (what two writers built can be compared).
const shape = (n: TreeNode<number, number>): unknown => (n.leaf ? { k: n.keys, v: n.vals } : { k: n.keys, c: n.children.map(shape) })

test('appendSorted builds the tree that one set per key builds; published trees keep their contents', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2500 }),
      fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 40 }),
      fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 5 }),
      (size, dels, appends) => {
        const w0 = new TreeWriter<number, number>(emptyTree())
        for (let k = 0; k < size; k++) w0.set(k * 2, k)
        for (const d of dels) w0.delete(d * 2)
        let tree = w0.publish()
        const published: Array<[Tree<number, number>, number[]]> = [[tree, [...new TreeIterator(tree.root, undefined)]]]
        let next = size * 2
        for (const n of appends) {
          const keys = Array.from({ length: n }, (_, i) => next + i * 3)
          next += n * 3
          const a = new TreeWriter(tree)
          a.appendSorted(keys, keys)
          const b = new TreeWriter(tree)
          SET_SHORTCUTS.enabled = false // the descent, not set's own append shortcut
          try {
            for (const k of keys) b.set(k, k)
          } finally {
            SET_SHORTCUTS.enabled = true
          }
          const ta = a.publish()
          validateTree(ta, 'appended')
          assert.equal(shape(ta.root as TreeNode<number, number>), shape(b.publish().root as TreeNode<number, number>))
          assert.is(ta.size, tree.size + n)
          tree = ta
          published.push([tree, [...new TreeIterator(tree.root, undefined)]])
        }
        for (const [t, want] of published) {
          validateTree(t, 'published')
          assert.equal([...new TreeIterator(t.root, undefined)], want)
        }
      },
    ),
    { numRuns: 200 },
  )
})

test('append leaves the right edge open; a read of the tree or another write seals it first', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom('append', 'get', 'set', 'delete', 'publish'), fc.integer({ min: 0, max: 60 })), { maxLength: 400 }),
      (ops) => {
        const w = new TreeWriter<number, number>(emptyTree())
        const model = new Map<number, number>()
        const published: Array<[Tree<number, number>, number[]]> = []
        let top = 0
        for (const [op, x] of ops) {
          if (op === 'append') {
            for (let i = 0; i <= x; i++) {
              top += 1 + (x & 3)
              w.append(top, top)
              model.set(top, top)
            }
          } else if (op === 'get') {
            const k = top - x
            assert.is(w.get(k), model.get(k))
          } else if (op === 'set' && top > x) {
            w.set(top - x, -1)
            model.set(top - x, -1)
          } else if (op === 'delete') {
            assert.is(w.delete(top - x), model.get(top - x))
            model.delete(top - x)
          } else if (op === 'publish') {
            const t = w.publish()
            validateTree(t, 'published')
            published.push([t, [...model.keys()].sort((a, b) => a - b).map((k) => model.get(k)!)])
          }
        }
        w.seal()
        validateTree(w, 'sealed')
        assert.equal(
          [...new TreeIterator(w.root, undefined)],
          [...model.keys()].sort((a, b) => a - b).map((k) => model.get(k)!),
        )
        for (const [t, want] of published) assert.equal([...new TreeIterator(t.root, undefined)], want)
      },
    ),
    { numRuns: 200 },
  )
})

test('appendSorted refuses a key that is not above the tree', () => {
  const w = new TreeWriter<number, number>(emptyTree())
  w.set(5, 5)
  assert.throws(() => w.appendSorted([5], [5]), /not above the tree/)
})

test('deleting whole leaves at once (the revision index of an update-only transaction): published trees keep their contents', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 600 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 700 }), fc.integer({ min: 0, max: 700 })), { minLength: 1, maxLength: 8 }),
      (rows, rounds) => {
        // Each round rewrites ids lo..hi: their old revisions (mostly the oldest, whole leaves of them)
        // go in one sorted pass, the new ones are appended, as TableWriter does.
        let tree: Tree<number, number> = emptyTree()
        const revOf = new Map<number, number>()
        let rev = 0
        const w0 = new TreeWriter(tree)
        for (let id = 0; id < rows; id++) {
          w0.set(++rev, id)
          revOf.set(id, rev)
        }
        tree = w0.publish()
        const published: Array<[Tree<number, number>, Array<[number, number]>]> = []
        const contents = () => [...revOf].map(([id, r]) => [r, id] as [number, number]).sort((a, b) => a[0] - b[0])
        published.push([tree, contents()])
        for (const [a, b] of rounds) {
          const w = new TreeWriter(tree)
          const stale: number[] = []
          for (let id = Math.min(a, b) % rows; id <= Math.min(Math.max(a, b), rows - 1); id++) {
            stale.push(revOf.get(id)!)
            w.set(++rev, id)
            revOf.set(id, rev)
          }
          stale.sort((x, y) => x - y)
          deleteSortedPresent(w, stale)
          tree = w.publish()
          validateTree(tree, 'after')
          published.push([tree, contents()])
        }
        for (const [t, want] of published) {
          validateTree(t, 'published')
          assert.is(t.size, want.length)
          assert.equal(
            [...new TreeIterator(t.root, undefined)],
            want.map(([, id]) => id),
          )
          for (const [r, id] of want) assert.is(treeGet(t.root, r), id)
        }
      },
    ),
    { numRuns: 300 },
  )
})

test('deleting every key at once leaves an empty tree and the published one whole', () => {
  for (const size of [2, 47, 49, 500, 3000]) {
    const w0 = new TreeWriter<number, number>(emptyTree())
    for (let k = 0; k < size; k++) w0.set(k, k)
    const first = w0.publish()
    const w = new TreeWriter(first)
    deleteSortedPresent(
      w,
      Array.from({ length: size }, (_, k) => k),
    )
    const after = w.publish()
    validateTree(after, 'after')
    assert.is(after.size, 0)
    assert.equal([...new TreeIterator(after.root, undefined)], [])
    validateTree(first, 'first')
    assert.equal(
      [...new TreeIterator(first.root, undefined)],
      Array.from({ length: size }, (_, k) => k),
    )
  }
})

test('numbers and strings share a tree: numbers first, each kind in its own order', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.boolean(),
          fc.oneof(fc.integer({ min: -50, max: 50 }), fc.double({ noNaN: true, min: -1e6, max: 1e6 }), fc.string({ maxLength: 3 })),
        ),
        { maxLength: 300 },
      ),
      (ops) => {
        const w = new TreeWriter<string | number, string>(emptyTree())
        const model = new Map<string | number, string>()
        for (const [del, k] of ops) {
          const key = k === 0 ? 0 : k // -0 is 0 in a Map too
          if (del) {
            assert.is(w.delete(key), model.get(key))
            model.delete(key)
          } else {
            w.set(key, `v${String(key)}`)
            model.set(key, `v${String(key)}`)
          }
        }
        const t = w.publish()
        validateTree(t, 'mixed')
        const keys = [...model.keys()].sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0))
        assert.ok(
          keys.every((k, i) => i === 0 || typeof keys[i - 1] === 'number' || typeof k === 'string'),
          'numbers before strings',
        )
        assert.equal(
          [...new TreeIterator(t.root, undefined)],
          keys.map((k) => model.get(k)),
        )
        for (const from of [-1e9, 0, 'a', ''])
          assert.equal(
            [...new TreeIterator(t.root, from)],
            keys.filter((k) => !less(k, from)).map((k) => model.get(k)),
          )
      },
    ),
    { numRuns: 200 },
  )
})

test('a large tree grows and shrinks to empty through splits, merges and borrowing', () => {
  const w = new TreeWriter<string, number>(emptyTree())
  const n = 20000
  const keys = Array.from({ length: n }, (_, i) => `k${(i * 7919) % n}`.padEnd(8, '.'))
  keys.forEach((k, i) => w.set(k, i))
  let t = w.publish()
  validateTree(t, 'full')
  assert.is(t.size, n)
  const w2 = new TreeWriter(t)
  for (let i = 0; i < n; i += 2) w2.delete(keys[i]!)
  const half = w2.publish()
  validateTree(half, 'half')
  validateTree(t, 'full after')
  assert.is(half.size, n / 2)
  const w3 = new TreeWriter(half)
  for (let i = 1; i < n; i += 2) w3.delete(keys[i]!)
  t = w3.publish()
  validateTree(t, 'empty')
  assert.is(t.size, 0)
  assert.equal([...new TreeIterator(t.root, undefined)], [])
  assert.is(half.size, n / 2)
})

test('prefix iteration stops at the first key outside the prefix', () => {
  const w = new TreeWriter<string, string>(emptyTree())
  for (const k of ['a', 'ab', 'abc', 'abd', 'ac', 'b', 'ba']) w.set(k, k)
  assert.equal([...new TreeIterator(w.root, 'ab', 'ab')], ['ab', 'abc', 'abd'])
  assert.equal([...new TreeIterator(w.root, 'b', 'b')], ['b', 'ba'])
  assert.equal([...new TreeIterator(w.root, 'c', 'c')], [])
})

// ---- key encoding ----

const arbPart: fc.Arbitrary<KeyPart> = fc.oneof(
  fc.string({ unit: fc.constantFrom('\0', '\x01', '\x02', 'a', 'b', '\uffff', 'é'), maxLength: 5 }),
  fc.double({ noNaN: true }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
  fc.boolean(),
  fc.uint8Array({ maxLength: 4, max: 3 }),
)

// Order across types follows the tags (unspecified for users, but fixed): inside a tuple the empty
// string, then strings starting with NUL, false, true, numbers, bigints, bytes, other strings.
const typeRank = (p: KeyPart) =>
  typeof p === 'string'
    ? p === ''
      ? 0
      : p[0] === '\0'
        ? 1
        : 7
    : typeof p === 'boolean'
      ? p
        ? 3
        : 2
      : typeof p === 'number'
        ? 4
        : typeof p === 'bigint'
          ? 5
          : 6

function comparePart(a: KeyPart, b: KeyPart): number {
  const ra = typeRank(a)
  const rb = typeRank(b)
  if (ra !== rb) return ra - rb
  if (typeof a === 'number' || typeof a === 'bigint') {
    const x = a as number
    const y = b as number
    return x < y ? -1 : x > y ? 1 : 0
  }
  if (typeof a === 'string') return a < (b as string) ? -1 : a > (b as string) ? 1 : 0
  if (a instanceof Uint8Array) {
    const y = b as Uint8Array
    for (let i = 0; i < Math.min(a.length, y.length); i++) if (a[i] !== y[i]) return a[i]! - y[i]!
    return a.length - y.length
  }
  return 0
}

function compareKey(a: readonly KeyPart[], b: readonly KeyPart[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = comparePart(a[i]!, b[i]!)
    if (c !== 0) return c
  }
  return a.length - b.length
}

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0)

test('encoding preserves key order and equality', () => {
  fc.assert(
    fc.property(fc.array(arbPart, { maxLength: 3 }), fc.array(arbPart, { maxLength: 3 }), (a, b) => {
      const ea = encodeKey(a)
      const eb = encodeKey(b)
      const want = sign(compareKey(a, b))
      assert.is(sign(ea < eb ? -1 : ea > eb ? 1 : 0), want, `${JSON.stringify(a, bigJson)} vs ${JSON.stringify(b, bigJson)}`)
    }),
    { numRuns: 3000 },
  )
})

test('no encoded key followed by the separator starts another key (the composite-key pitfall)', () => {
  fc.assert(
    fc.property(fc.array(arbPart, { maxLength: 3 }), fc.array(arbPart, { maxLength: 3 }), (a, b) => {
      if (compareKey(a, b) === 0) return
      assert.not.ok((encodeKey(b) + KEY_SEPARATOR).startsWith(encodeKey(a) + KEY_SEPARATOR))
    }),
    { numRuns: 3000 },
  )
})

test('a string prefix finds exactly the keys that start with it', () => {
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom('\0', '\x01', 'a', 'b'), maxLength: 4 }),
      fc.string({ unit: fc.constantFrom('\0', '\x01', 'a', 'b'), maxLength: 6 }),
      (p, s) => {
        assert.is(String(encodeKey(s)).startsWith(String(encodePrefix(p))), s.startsWith(p))
        assert.is(String(encodeKey(['x', s])).startsWith(String(encodePrefix(['x', p]))), s.startsWith(p))
      },
    ),
    { numRuns: 2000 },
  )
})

test('whole keys of one type keep their order; keys of different types never collide', () => {
  fc.assert(
    fc.property(arbPart, arbPart, (a, b) => {
      const ea = encodeKey(a)
      const eb = encodeKey(b)
      if (typeRank(a) === typeRank(b) || (typeof a === 'string' && typeof b === 'string')) {
        assert.is(sign(ea < eb ? -1 : ea > eb ? 1 : 0), sign(comparePart(a, b)))
      } else {
        assert.is.not(ea, eb)
      }
      assert.is.not(encodeKey([a]), ea, 'a tuple of one is not its part')
    }),
    { numRuns: 3000 },
  )
  assert.is(encodeKey('plain'), 'plain', 'a string without NUL encodes to itself')
})

test('empty keys are keys; -0 is 0; NaN is refused', () => {
  const keys: Key[] = ['', new Uint8Array(), [], 0]
  const enc = keys.map(encodeKey)
  assert.is(new Set(enc).size, keys.length)
  assert.is(encodeKey(-0), encodeKey(0))
  assert.throws(() => encodeKey(NaN), /NaN/)
})

function bigJson(_k: string, v: unknown) {
  return typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? [...v] : v
}

test.run()
