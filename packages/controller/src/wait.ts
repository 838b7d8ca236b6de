// waitForConvergence: the end-to-end wait for tests. It returns only when
// 0. the Manager does the leader's work (it leads and its leader-only parts started): a standby
//    replica never converges, its wait times out naming the leader;
// 1. every reflector holds what the API server had when the call was made (a fresh list per
//    reflector: every listed object at its version or newer, nothing the list no longer has);
// 2. every derivation has derived from those tables;
// 3. the reconciler has acted on the resulting desired objects (applied, deleted, or failed and
//    queued for retry), deletes included; and every component's settled() says so.
// With `errors: 'wait'` it also waits until nothing is in error (desired objects, derivation inputs,
// components' failing objects); with 'return' (the default) errors are returned as they are.
// On timeout it throws, listing what is still pending per table with each object's last error.
import { TimeoutError } from './errors.ts'
import { listAll, resolveKind, namespacedName, type KubeObject } from '@statewright/k8s'
import { waitForSettled } from '@statewright/reconciler'
import { waitAny, type ReadTxn, type Table } from '@statewright/statedb'
import type { Manager } from './manager/manager.ts'

export interface ConvergenceOptions {
  /** ms (default 30 000). */
  timeoutMs?: number
  signal?: AbortSignal
  /**
   * 'return' (default): converged once every error is acted on (failed and queued for retry), and the
   * errors are returned. 'wait': until there are none (or the timeout).
   */
  errors?: 'return' | 'wait'
}

export interface ConvergenceResult {
  /** Desired objects in error (acted on, failing, being retried). */
  errors: Array<{ object: string; error: string }>
}

/** Versions compare as numbers when they are (the test server's and etcd's are); else by equality. */
function atLeast(have: string | undefined, want: string | undefined): boolean {
  if (have === undefined || want === undefined) return have === want
  if (/^\d+$/.test(have) && /^\d+$/.test(want)) return BigInt(have) >= BigInt(want)
  return have === want
}

export async function waitForConvergence(m: Manager, o: ConvergenceOptions = {}): Promise<ConvergenceResult> {
  const timeout = o.timeoutMs ?? 30_000
  const signal = o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(timeout)]) : AbortSignal.timeout(timeout)
  const state = { phase: 'listing the server', pending: [] as string[] }
  try {
    // a pass that changed the cluster (applies, deletes, status writes, a finalizer's cleanup) goes
    // round again, so the reflectors have seen our own writes (drift repair relies on them, and a
    // status write's echo runs the function once more)
    const writes = () => {
      const t = m.target.stats
      return t.applies + t.deletes + t.pruned + m.components.reduce((n, c) => n + (c.writes?.() ?? 0), 0)
    }
    for (;;) {
      state.phase = 'waiting to lead'
      await m.whenWorking(signal)
      const busy = m.components.filter((c) => c.idle && !c.idle())
      const before = writes()
      const txn = m.db.readTxn()
      const result = await pass(m, signal, state)
      if (!m.isWorking()) continue // leadership lost during the pass: what it saw may not hold
      if (busy.length === 0 && writes() === before && m.components.every((c) => !c.idle || c.idle())) {
        if (o.errors !== 'wait') return result
        const failing = failingNow(m, result)
        if (failing.length === 0) return result
        state.phase = `errors: ${failing.slice(0, 3).join('; ')}`
        await changeAfter(m, txn, signal)
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err
    const lead = m.leader()
    if (state.phase === 'waiting to lead')
      state.phase = lead ? `a standby: ${lead.identity} waits to lead, ${lead.leader ?? 'nobody'} leads` : `the manager is not running`
    throw new TimeoutError(
      `waitForConvergence: not converged after ${timeout} ms (${state.phase}):\n${describePending(m, state.pending)
        .map((l) => `  - ${l}`)
        .join('\n')}`,
      { cause: err },
    )
  }
}

async function pass(m: Manager, signal: AbortSignal, state: { phase: string; pending: string[] }): Promise<ConvergenceResult> {
  const pending = state.pending
  state.phase = 'listing the server'
  // 1. reflectors against a fresh list of the same selection
  const lists = await Promise.all(
    [...m.watched].map(async ([name, w]) => {
      const r = await resolveKind(w.cluster, w.kind)
      const opts = w.options
      const { items, resourceVersion } = await listAll(w.cluster, r, {
        namespace: opts.namespace,
        // a per-shard cache selects the shards held now
        labelSelector: m.reflectors.get(name)?.currentLabelSelector ?? opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        signal,
      })
      return {
        name,
        table: w.table,
        want: new Map(items.map((i: KubeObject) => [namespacedName(i), String(i.metadata.resourceVersion)])),
        listRv: resourceVersion,
      }
    }),
  )
  state.phase = 'reflectors catching up'
  for (const l of lists) {
    for (;;) {
      const txn = m.db.readTxn()
      pending.length = 0
      for (const [key, rv] of l.want) {
        const have = l.table.get(txn, l.table.primary.query(key))
        if (!have || !atLeast(String(have.metadata.resourceVersion), rv))
          pending.push(`${l.name} ${key}: ${have ? `at ${have.metadata.resourceVersion}, server has ${rv}` : 'missing'}`)
      }
      for (const obj of l.table.all(txn)) {
        const key = namespacedName(obj)
        if (!l.want.has(key) && !atLeast(String(obj.metadata.resourceVersion), String(Number(l.listRv ?? 0) + 1)))
          pending.push(`${l.name} ${key}: deleted on the server, still in the table`)
      }
      if (pending.length === 0) break
      const [, w] = l.table.allWatch(txn)
      await w.wait(signal)
    }
  }
  // 2. drift repair (it may mark desired objects pending), then derivations
  state.phase = 'drift repair and derivations'
  const txn = m.db.readTxn()
  if (m.reconciler.isRunning) for (const d of m.drift) await d.waitFor(txn, signal)
  // each derivation up to a snapshot taken after the ones before it: a reconcile step's children
  // derivation reads what its first derivation wrote
  for (const d of m.derivations) if (d.running) await d.waitFor(m.db.readTxn(), signal) // not leading: nothing to wait for
  // 3. the reconciler, then components
  state.phase = 'the reconciler'
  // every change (deletes included) acted on, then nothing pending (retries of failures are "acted on")
  if (m.reconciler.isRunning) await m.reconciler.waitForRevision(m.desired.table.revision(m.db.readTxn()), { signal })
  const errors = await waitForSettled(m.db, m.desired.table, m.desired.statusIndex, { signal })
  state.phase = 'components'
  // a part that is not running (a leader-only one on a standby) has nothing to settle
  for (const c of m.components) if (c.health().level !== 'stopped') await c.settled(signal)
  return {
    errors: errors.map((e) => ({
      object: `${e.object.kind} ${e.object.metadata.namespace ?? ''}/${e.object.metadata.name}`,
      error: e.status.error ?? '',
    })),
  }
}

/** Everything in error now: desired objects, derivation inputs, components' failing objects. */
function failingNow(m: Manager, result: ConvergenceResult): string[] {
  const out = result.errors.map((e) => `${e.object}: ${e.error}`)
  const txn = m.db.readTxn()
  for (const d of m.derivations) for (const f of d.failures(txn)) out.push(`derivation ${d.name}: ${f.input}: ${f.error}`)
  for (const c of m.components) for (const f of c.health?.().failing ?? []) out.push(`${c.name}: ${f.key}: ${f.error}`)
  return out
}

/** Resolves when a table that holds errors changed after `txn` (their retries run meanwhile). */
async function changeAfter(m: Manager, txn: ReadTxn, signal: AbortSignal): Promise<void> {
  const tables = new Set<Table<any>>([m.desired.table])
  for (const d of m.derivations) tables.add(d.errors).add(d.to)
  // components keep their failures in tables of their own or not at all: look again after a retry's time
  const tick = AbortSignal.any([signal, AbortSignal.timeout(250)])
  try {
    await waitAny(
      [...tables].map((t) => t.allWatch(txn)[1]),
      tick,
    )
  } catch {
    signal.throwIfAborted()
  }
}

function describePending(m: Manager, reflectorLines: string[]): string[] {
  const out = reflectorLines.slice(0, 20)
  const txn = m.db.readTxn()
  for (const d of m.derivations)
    for (const f of d.failures(txn)) out.push(`derivation ${d.name}: ${f.input}: ${f.error} (attempt ${f.attempts})`)
  for (const kind of ['pending', 'error'] as const) {
    for (const d of m.desired.table.list(txn, m.desired.statusIndex.kind(kind))) {
      out.push(
        `${m.desired.table.name} ${d.object.kind} ${d.object.metadata.namespace ?? ''}/${d.object.metadata.name}: ${kind}${d.status.error ? `: ${d.status.error}` : ''}`,
      )
    }
  }
  for (const c of m.components) {
    const h = c.health?.()
    if (h && (h.level !== 'ok' || !h.ready)) out.push(`${c.name}: ${h.message}`)
  }
  return out.length ? out : ['(nothing pending found: the wait itself was slow)']
}
