// The B+tree writer against a Map over long random sequences: number and string keys, trees with
// and without revisions, sets (value = key, published with one array for both), appends, the
// shortcuts of `set`, removals now (delete), gathered (deleteLater, in order or not) and at once
// (deleteSortedPresent), clear, and publish with the writer kept or replaced (the new one taking
// over the old one's gather array, as a table's next writer does). Every published tree is checked
// again at the end. (Written by a reviewer of the write-path change of issue 39.)
import fc from 'fast-check'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { emptyTree, type Tree, type TreeNode } from '../src/btree.ts'
import { TreeIterator } from '../src/treeiterator.ts'
import { SET_SHORTCUTS, TreeWriter } from '../src/treewriter.ts'
import { validateTree } from '../src/treecheck.ts'
import { deleteSortedPresent } from '../src/bulkdelete.ts'

const KEYS = 3000
type K = number | string
const enc = (n: number, str: boolean): K => (str ? 's' + String(n).padStart(5, '0') : n)
const cmp = (a: K, b: K) => (typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : typeof a === 'number' ? -1 : 1)

const op = fc.oneof(
  fc.record({ op: fc.constant('above' as const), n: fc.integer({ min: 1, max: 400 }) }),
  fc.record({ op: fc.constant('append' as const), n: fc.integer({ min: 1, max: 400 }) }),
  fc.record({ op: fc.constant('set' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('run' as const), from: fc.nat(KEYS), n: fc.integer({ min: 1, max: 300 }) }),
  fc.record({
    op: fc.constant('later' as const),
    from: fc.nat(KEYS),
    n: fc.integer({ min: 1, max: 300 }),
    shuffle: fc.boolean(),
    step: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ op: fc.constant('delete' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('bulk' as const), from: fc.nat(KEYS), n: fc.integer({ min: 1, max: 300 }) }),
  fc.record({ op: fc.constant('get' as const), k: fc.nat(KEYS) }),
  fc.record({ op: fc.constant('clear' as const) }),
  fc.record({ op: fc.constant('iterate' as const) }),
  fc.record({ op: fc.constant('publish' as const), fresh: fc.boolean() }),
)

test('every writer method, interleaved at random, agrees with a Map; every published tree stays as it was', () => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      fc.array(op, { minLength: 1, maxLength: 150, size: 'max' }),
      (str, kv, revsOn, ops) => {
        const revs = revsOn && !kv
        let w = new TreeWriter<K, K>(emptyTree(revs))
        w.keyIsValue = kv
        let spare: K[] | undefined
        const model = new Map<K, K>()
        const published: Array<[Tree<K, K>, Array<[K, K]>]> = []
        let top = -1
        let rev = 1
        const sorted = () => [...model.keys()].sort(cmp)
        const entries = () => sorted().map((k) => [k, model.get(k)!] as [K, K])
        const dump = (t: TreeNode<K, K>) => {
          const it = new TreeIterator(t, undefined)
          const g: Array<[K, K]> = []
          for (let r = it.next(); !r.done; r = it.next()) g.push([it.key!, r.value])
          return g
        }
        const setk = (n: number) => {
          const k = enc(n, str)
          const v = kv ? k : typeof k === 'number' ? -k - rev * 100000 : k + '/' + rev
          const old = w.set(k, v, undefined, rev++)
          assert.is(old, model.get(k))
          model.set(k, v)
          top = Math.max(top, n)
        }
        for (const o of ops) {
          switch (o.op) {
            case 'above':
              for (let i = 0; i < o.n; i++) setk(top + 1)
              break
            case 'append':
              for (let i = 0; i < o.n; i++) {
                top++
                const k = enc(top, str)
                w.append(k, k, rev++)
                model.set(k, k)
              }
              break
            case 'set':
              setk(o.k)
              break
            case 'run': {
              for (const k of sorted()
                .filter((k) => cmp(k, enc(o.from, str)) >= 0)
                .slice(0, o.n)) {
                const v = kv ? k : typeof k === 'number' ? -k - rev * 100000 : k + '/' + rev
                assert.is(w.set(k, v, undefined, rev++), model.get(k))
                model.set(k, v)
              }
              break
            }
            case 'later': {
              const keys = sorted()
                .filter((k) => cmp(k, enc(o.from, str)) >= 0)
                .filter((_, i) => i % o.step === 0)
                .slice(0, o.n)
              if (o.shuffle) keys.reverse()
              for (const k of keys) {
                w.deleteLater(k)
                model.delete(k)
              }
              break
            }
            case 'delete': {
              const k = enc(o.k, str)
              assert.is(w.delete(k), model.get(k))
              model.delete(k)
              break
            }
            case 'bulk': {
              const keys = sorted()
                .filter((k) => cmp(k, enc(o.from, str)) >= 0)
                .slice(0, o.n)
              deleteSortedPresent(w, keys)
              for (const k of keys) model.delete(k)
              break
            }
            case 'get': {
              const k = enc(o.k, str)
              assert.is(w.get(k), model.get(k))
              break
            }
            case 'clear':
              w.clear()
              model.clear()
              break
            case 'iterate':
              assert.equal(dump(w.root), entries())
              assert.is(w.size, model.size)
              break
            case 'publish': {
              const t = w.publish()
              validateTree(t, 'pub')
              assert.equal(dump(t.root), entries())
              published.push([t, entries()])
              if (o.fresh) {
                spare = w.takeGathered()
                w = new TreeWriter(t)
                w.keyIsValue = kv
                if (spare) w.gatherIn(spare)
              }
              break
            }
          }
          assert.is(w.size, model.size)
        }
        const t = w.publish()
        validateTree(t, 'final')
        assert.equal(dump(t.root), entries())
        for (const [p, want] of published) {
          validateTree(p, 'earlier')
          assert.equal(dump(p.root), want)
        }
      },
    ),
    { numRuns: Number(process.env.RUNS ?? 300) },
  )
})
test.run()
