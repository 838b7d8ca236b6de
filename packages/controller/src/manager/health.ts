// A Manager's readiness (GET /readyz) and status (GET /statusz), computed from its parts.
// Invariants:
// - Readiness never depends on an object's error: only on the manager's state, initialization,
//   stopped parts and lost watches. Object errors show in the status (health levels, counts, examples).
// - Leader-only parts count toward readiness only while this replica leads (a standby is ready).
import type { Reconciler, ReconcilerHealth } from '@statewright/reconciler'
import type { DesiredObject, DriftWatcher, KubeObject, LeaderElector, Reflector, ShardedLeases } from '@statewright/k8s'
import type { Derivation } from '../derive/derivation.ts'
import type { Component } from './options.ts'

export type ManagerState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped'

/** What readiness and status read of a Manager. */
export interface ManagerParts {
  readonly name: string
  readonly state: ManagerState
  readonly reflectors: ReadonlyMap<string, Reflector<KubeObject>>
  readonly derivations: ReadonlyArray<Derivation<any, any>>
  readonly reconciler: Reconciler<DesiredObject>
  readonly drift: readonly DriftWatcher[]
  readonly components: readonly Component[]
  readonly elector: LeaderElector | undefined
  readonly shardLeases: ShardedLeases | undefined
  readonly leading: boolean
}

/** Ready: every part initialized and running, no watch lost. Object errors do not count. */
export function readinessOf(m: ManagerParts): { ready: boolean; reasons: string[] } {
  const reasons: string[] = []
  if (m.state !== 'running') reasons.push(`manager is ${m.state}`)
  for (const [name, r] of m.reflectors) {
    const h = r.health()
    if (!h.ready) reasons.push(`reflector ${name}: ${h.synced ? `watch lost (${h.lastError ?? h.state})` : 'not synced yet'}`)
  }
  const leaderParts = m.elector ? m.elector.health().leading : true
  if (leaderParts) {
    for (const d of m.derivations) {
      const h = d.health()
      if (!h.ready)
        reasons.push(
          `derivation ${d.name}: ${h.waitingFor ? `waiting for ${h.waitingFor.map((n) => `"${n}"`).join(', ')} to be listed` : 'not initialized'}`,
        )
    }
    const h = m.reconciler.health()
    if (!h.ready) reasons.push(`reconciler ${m.name}: ${h.notReady ?? 'not ready'}`)
  }
  for (const c of m.components) {
    if (c.leaderOnly && !leaderParts) continue
    const h = c.health?.()
    if (h && !h.ready) reasons.push(`${c.name}: ${h.message}`)
  }
  return { ready: reasons.length === 0, reasons }
}

/** Everything /statusz shows: each part's health, object errors with examples. */
export function statusOf(m: ManagerParts, readiness: () => { ready: boolean; reasons: string[] }): Record<string, unknown> {
  const rec: ReconcilerHealth = m.reconciler.health()
  return {
    name: m.name,
    state: m.state,
    ...readiness(),
    leader: m.elector ? m.elector.health() : { leading: m.leading },
    ...(m.shardLeases ? { sharding: m.shardLeases.health() } : {}),
    reflectors: [...m.reflectors.values()].map((r) => r.health()),
    derivations: m.derivations.map((d) => ({ name: d.name, ...d.health() })),
    reconciler: { name: m.name, level: rec.level, message: rec.message, ready: rec.ready, errors: rec.errors, failing: rec.failing },
    drift: m.drift.map((d) => d.health()),
    components: m.components.map((c) => ({ name: c.name, ...(c.health?.() ?? { ready: true, level: 'ok', message: '' }) })),
  }
}
