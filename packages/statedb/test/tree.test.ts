// The persistent B+tree and the key encoding, against plain models.

import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, less, treeEach, treeGet, TreeIterator, TreeWriter, type Tree, type TreeNode } from '../src/btree.ts'
import { validateTree } from '../src/treecheck.ts'
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

test('a queue shape (delete the smallest, append a larger: a bucket of pending keys) rebalances in place and stays a valid tree; treeEach agrees with the iterator', () => {
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
