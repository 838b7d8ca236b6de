// Server-side apply against a small, independent model of structured-merge-diff's semantics.
// The model knows nothing of paths or FieldsV1: it keeps a value and a set of owners per *atom*
// (a scalar, an atomic list or map, a map key, a set value, a keyed item, a field of an item) and
// states the rules in a few lines:
// - an apply conflicts on an atom another manager owns with a different value, unless forced, in
//   which case the other manager loses it; equal values are shared;
// - the applier owns exactly what it applied; an atom it applied last time and not now is removed
//   unless another *applier* owns it (an Update manager does not keep it); a removed item goes whole;
// - an Update takes the atoms it changed from everyone.
// Random sequences of applies by two managers (with and without force) and updates by a third are
// run through both; the objects, the conflicts and the key invariant must agree at every step.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { serverSideApply, recordUpdate } from '../src/apply.ts'
import { crdSchema } from '../src/schema.ts'
import { StatusError } from '../src/status.ts'

const schema = crdSchema({
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        x: { type: 'string' },
        args: { type: 'array', items: { type: 'string' } }, // no list type: atomic
        sel: { type: 'object', 'x-kubernetes-map-type': 'atomic', additionalProperties: { type: 'string' } },
        tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
        items: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: { type: 'object', properties: { name: { type: 'string' }, v: { type: 'string' }, w: { type: 'string' } } },
        },
      },
    },
  },
})

interface Item {
  name: string
  v?: string
  w?: string
}
interface Cfg {
  x?: string
  args?: string[]
  sel?: Record<string, string>
  labels?: Record<string, string>
  tags?: string[]
  items?: Item[]
}
type Op = { kind: 'apply'; manager: 'A' | 'B'; cfg: Cfg; force: boolean } | { kind: 'update'; atom: number; value: string }

// ---------- the model ----------
class Model {
  values = new Map<string, string>() // atom -> JSON value ('true' for items and set values)
  owners = new Map<string, Set<string>>()
  appliers = new Map<string, Set<string>>() // manager -> atoms of its last apply
  tagOrder: string[] = []
  itemOrder: string[] = []

  static atoms(cfg: Cfg): Map<string, string> {
    const m = new Map<string, string>()
    if (cfg.x !== undefined) m.set('x', JSON.stringify(cfg.x))
    if (cfg.args) m.set('args', JSON.stringify(cfg.args))
    if (cfg.sel) m.set('sel', JSON.stringify(Object.entries(cfg.sel).sort()))
    for (const [k, v] of Object.entries(cfg.labels ?? {})) m.set(`label.${k}`, JSON.stringify(v))
    for (const t of cfg.tags ?? []) m.set(`tag.${t}`, 'true')
    for (const it of cfg.items ?? []) {
      m.set(`item.${it.name}`, 'true')
      if (it.v !== undefined) m.set(`item.${it.name}.v`, JSON.stringify(it.v))
      if (it.w !== undefined) m.set(`item.${it.name}.w`, JSON.stringify(it.w))
    }
    return m
  }
  private own(atom: string): Set<string> {
    let s = this.owners.get(atom)
    if (!s) this.owners.set(atom, (s = new Set()))
    return s
  }
  private remove(atom: string): void {
    this.values.delete(atom)
    this.owners.delete(atom)
    for (const s of this.appliers.values()) s.delete(atom)
    if (atom.startsWith('tag.')) this.tagOrder = this.tagOrder.filter((t) => `tag.${t}` !== atom)
    if (/^item\.[^.]+$/.test(atom)) {
      const name = atom.slice(5)
      this.itemOrder = this.itemOrder.filter((n) => n !== name)
      this.remove(`${atom}.v`)
      this.remove(`${atom}.w`)
    }
  }

  /** Returns false on a conflict (nothing changes). */
  apply(manager: string, cfg: Cfg, force: boolean): boolean {
    const atoms = Model.atoms(cfg)
    const conflicts: Array<[string, string]> = []
    for (const [a, v] of atoms) {
      for (const o of this.owners.get(a) ?? []) if (o !== manager && this.values.get(a) !== v) conflicts.push([a, o])
    }
    if (conflicts.length && !force) return false
    for (const [a, o] of conflicts) {
      this.owners.get(a)!.delete(o)
      this.appliers.get(o)?.delete(a)
    }
    for (const [a, v] of atoms) {
      if (a.startsWith('tag.') && !this.values.has(a)) this.tagOrder.push(a.slice(4))
      if (/^item\.[^.]+$/.test(a) && !this.values.has(a)) this.itemOrder.push(a.slice(5))
      this.values.set(a, v)
    }
    const last = this.appliers.get(manager) ?? new Set<string>()
    for (const a of last) this.owners.get(a)?.delete(manager)
    for (const a of atoms.keys()) this.own(a).add(manager)
    this.appliers.set(manager, new Set(atoms.keys()))
    const appliedByOthers = (a: string) => [...this.appliers].some(([m, s]) => m !== manager && s.has(a))
    // items first (they take their fields along), then the rest
    const dropped = [...last].filter((a) => !atoms.has(a) && !appliedByOthers(a))
    for (const a of dropped.sort((p, q) => p.split('.').length - q.split('.').length)) if (this.values.has(a)) this.remove(a)
    for (const [a, s] of this.owners) if (s.size === 0) this.owners.delete(a)
    return true
  }

  update(manager: string, atom: string, value: string): void {
    if (this.values.get(atom) === value) return // a write that changes nothing takes nothing
    this.values.set(atom, value)
    for (const s of this.appliers.values()) s.delete(atom)
    this.owners.set(atom, new Set([manager]))
  }

  render(): { labels: Record<string, string>; spec: Record<string, unknown> } {
    const get = (a: string) => (this.values.has(a) ? JSON.parse(this.values.get(a)!) : undefined)
    const spec: Record<string, unknown> = {}
    if (this.values.has('x')) spec.x = get('x')
    if (this.values.has('args')) spec.args = get('args')
    if (this.values.has('sel')) spec.sel = Object.fromEntries(get('sel'))
    if (this.tagOrder.length) spec.tags = [...this.tagOrder]
    if (this.itemOrder.length) {
      spec.items = this.itemOrder.map((n) => {
        const it: Item = { name: n }
        if (this.values.has(`item.${n}.v`)) it.v = get(`item.${n}.v`)
        if (this.values.has(`item.${n}.w`)) it.w = get(`item.${n}.w`)
        return it
      })
    }
    const labels: Record<string, string> = {}
    for (const [a, v] of this.values) if (a.startsWith('label.')) labels[a.slice(6)] = JSON.parse(v)
    return { labels, spec }
  }
  /** Atoms an Update can change: x, labels and item fields present now. */
  updatable(): string[] {
    return [...this.values.keys()].filter((a) => a === 'x' || a.startsWith('label.') || /^item\.[^.]+\.[vw]$/.test(a)).sort()
  }
}

// ---------- the implementation, driven the same way ----------
const BASE = { apiVersion: 'x.io/v1', kind: 'Thing' }
function toObject(cfg: Cfg): any {
  const spec: Record<string, unknown> = {}
  for (const k of ['x', 'args', 'sel', 'tags', 'items'] as const) if (cfg[k] !== undefined) spec[k] = cfg[k]
  return { ...BASE, metadata: { name: 't', ...(cfg.labels ? { labels: cfg.labels } : {}) }, ...(Object.keys(spec).length ? { spec } : {}) }
}
function setAtom(obj: any, atom: string, value: string): any {
  const next = structuredClone(obj)
  if (atom === 'x') next.spec.x = value
  else if (atom.startsWith('label.')) next.metadata.labels[atom.slice(6)] = value
  else {
    const [, name, f] = atom.split('.') as [string, string, 'v' | 'w']
    next.spec.items.find((i: Item) => i.name === name)[f] = value
  }
  return next
}
function observed(obj: any): { labels: Record<string, string>; spec: Record<string, unknown> } {
  return { labels: obj?.metadata?.labels ?? {}, spec: obj?.spec ?? {} }
}
function assertKeys(obj: any, step: number): void {
  for (const it of obj?.spec?.items ?? [])
    assert.ok(typeof it.name === 'string', `step ${step}: an item lost its key: ${JSON.stringify(it)}`)
}

// ---------- generators ----------
const val = fc.constantFrom('a', 'b')
const subset = <T>(xs: T[]) => fc.subarray(xs, { minLength: 1 })
const cfgArb: fc.Arbitrary<Cfg> = fc.record(
  {
    x: val,
    args: fc.array(val, { minLength: 1, maxLength: 2 }),
    sel: fc.dictionary(fc.constantFrom('p', 'q'), val, { minKeys: 1, maxKeys: 2 }),
    labels: fc.dictionary(fc.constantFrom('l1', 'l2'), val, { minKeys: 1, maxKeys: 2 }),
    tags: subset(['t1', 't2', 't3']),
    items: subset(['n1', 'n2', 'n3']).chain((names) =>
      fc.tuple(...names.map((name) => fc.record({ v: val, w: val }, { requiredKeys: [] }).map((f) => ({ name, ...f })))),
    ),
  },
  { requiredKeys: [] },
)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('apply' as const),
      manager: fc.constantFrom('A' as const, 'B' as const),
      cfg: cfgArb,
      force: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('update' as const), atom: fc.nat(), value: fc.constantFrom('a', 'b', 'c') }) },
)

function run(ops: Op[]): void {
  const model = new Model()
  let obj: any
  ops.forEach((op, step) => {
    if (op.kind === 'update') {
      const atoms = model.updatable()
      if (!obj || atoms.length === 0) return
      const atom = atoms[op.atom % atoms.length]!
      const next = setAtom(obj, atom, op.value)
      const mf = recordUpdate(obj, next, { manager: 'editor', apiVersion: 'x.io/v1', scope: 'all', schema })
      obj = { ...next, metadata: { ...next.metadata, managedFields: mf } }
      model.update('editor', atom, JSON.stringify(op.value))
    } else {
      const expectOk = model.apply(op.manager, op.cfg, op.force)
      try {
        obj = serverSideApply(obj, toObject(op.cfg), {
          manager: op.manager,
          force: op.force,
          apiVersion: 'x.io/v1',
          scope: 'all',
          schema,
        }).object
        assert.ok(expectOk, `step ${step}: the model expected a conflict`)
      } catch (e) {
        if (!(e instanceof StatusError) || e.code !== 409) throw e
        assert.not.ok(expectOk, `step ${step}: unexpected conflict: ${e.message}`)
      }
    }
    assertKeys(obj, step)
    assert.equal(observed(obj), model.render(), `step ${step} (${JSON.stringify(op)})`)
  })
}

test('SSA agrees with the model: keyed lists, sets, atomic lists and maps, two appliers, force, an updater', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 14 }), (ops) => {
      run(ops)
    }),
    { numRuns: 400, seed: 1234 },
  )
})

test('SSA agrees with the model on fresh seeds', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 14 }), (ops) => {
      run(ops)
    }),
    { numRuns: 200 },
  )
})

test('the model itself: dropping an item owned by one applier removes it whole', () => {
  const m = new Model()
  m.apply(
    'A',
    {
      items: [
        { name: 'n1', v: 'a' },
        { name: 'n2', w: 'b' },
      ],
    },
    false,
  )
  m.apply('A', { items: [{ name: 'n1' }] }, false)
  assert.equal(m.render().spec, { items: [{ name: 'n1' }] })
})

test.run()
