// Validation mode (STATEWRIGHT_VALIDATE=1): after every commit, check each changed table's trees
// and their agreement; deep-freeze inserted objects so that mutating a stored object throws.

import { InternalError } from './errors.ts'
import { carriesRevisions, treeGet, type Tree, type TreeKey } from './btree.ts'
import { TreeIterator } from './treeiterator.ts'
import { validateTree } from './treecheck.ts'
import { validateBuckets, type BucketTree } from './buckets.ts'
import type { TableSchema } from './schema.ts'
import type { TableState } from './state.ts'
import type { EncodedKey } from './encoding.ts'

export let validating = /^(1|true|yes)$/i.test(process.env.STATEWRIGHT_VALIDATE ?? '')

/** Turns validation mode on or off (tests; the environment variable sets the default). */
export function setValidation(on: boolean): void {
  validating = on
}

export function deepFreeze(obj: unknown): void {
  if (obj === null || typeof obj !== 'object' || Object.isFrozen(obj)) return
  if (ArrayBuffer.isView(obj)) return // typed arrays cannot be frozen
  Object.freeze(obj)
  for (const key of Reflect.ownKeys(obj)) deepFreeze((obj as Record<PropertyKey, unknown>)[key])
}

export function validateState<Obj>(schema: TableSchema<Obj>, state: TableState<Obj>): void {
  const t = `table "${schema.name}"`
  validateTree(state.primary, `${t} primary index`)
  validateTree(state.byRevision, `${t} revision index`)
  if (!carriesRevisions(state.primary.root)) throw new InternalError(`${t} primary index: its leaves carry no revisions`)
  if (carriesRevisions(state.byRevision.root)) throw new InternalError(`${t} revision index: its leaves carry revisions`)
  const pairs = state.secondary.map((tree, i) => {
    const what = `${t} index "${schema.secondary[i]!.name}"`
    if (!schema.secondary[i]!.unique)
      return validateBuckets(tree as BucketTree, state.primary.root, (obj: Obj, sk) => schema.secondaryKeys(i, obj).includes(sk), what)
    validateTree(tree as Tree<TreeKey, unknown>, what)
    const it = new TreeIterator(tree.root as Tree<EncodedKey, EncodedKey>['root'], undefined)
    for (const pk of it) {
      const obj = treeGet(state.primary.root, pk)
      if (obj === undefined) throw new InternalError(`${what}: key ${String(it.key)} holds a primary key the primary index lacks`)
      if (!schema.secondaryKeys(i, obj).includes(it.key!))
        throw new InternalError(`${what}: key ${String(it.key)} names an object without it`)
    }
    return tree.size
  })
  if (state.byRevision.size !== state.primary.size) {
    throw new InternalError(`${t}: ${state.primary.size} objects but ${state.byRevision.size} revision entries`)
  }
  let expected = state.secondary.map(() => 0)
  const it = new TreeIterator(state.primary.root, undefined)
  for (const obj of it) {
    const revision = it.revision
    if (revision > state.revision) throw new InternalError(`${t}: object at revision ${revision} above table revision ${state.revision}`)
    // With the sizes equal, this also makes the revisions distinct.
    if (treeGet(state.byRevision.root, revision) !== obj)
      throw new InternalError(`${t}: the revision index does not hold the object stored at revision ${revision}`)
    if (schema.primaryKey(obj) !== it.key) throw new InternalError(`${t}: stored object's primary key changed (was it mutated?)`)
    expected = expected.map((n, i) => n + new Set(schema.secondaryKeys(i, obj)).size)
  }
  pairs.forEach((n, i) => {
    if (n !== expected[i]) {
      throw new InternalError(`${t} index "${schema.secondary[i]!.name}": ${n} entries, objects give ${expected[i]} keys`)
    }
  })
}
