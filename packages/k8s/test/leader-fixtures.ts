// Fixtures for the leader election and sharding tests: a Cluster whose requests can be frozen (a
// holder cut off from the API server), a fenced register on the server (a ConfigMap that every
// acting leader read-modify-writes with its fencing token) and the checks of recorded terms.
import { Cluster, isConflict, isNotFound, type LeaseTerm, type RequestOptions } from '@statewright/k8s'
import { wallNow } from '../src/lease.ts'

/** A Cluster whose requests stall while frozen (they go out when thawed). */
export class FreezableCluster extends Cluster {
  private gate: Promise<void> | undefined
  private open: (() => void) | undefined
  freeze(): void {
    if (this.gate) return
    this.gate = new Promise((r) => {
      this.open = r
    })
  }
  thaw(): void {
    const open = this.open
    this.gate = undefined
    this.open = undefined
    open?.()
  }
  override async request<T = any>(o: RequestOptions): Promise<T> {
    while (this.gate) await this.gate
    return super.request<T>(o)
  }
}

/** One acting period of a leader (or of a shard owner). */
export interface Period {
  identity: string
  lease: string
  transitions: number
  resourceVersion: string
  start: number
  /** When acting stopped: its renew deadline or the end of the term, whichever came first. */
  end: number
}

export function periodOf(term: LeaseTerm, end = term.validUntil()): Period {
  return {
    identity: term.identity,
    lease: term.lease,
    transitions: term.transitions,
    resourceVersion: term.resourceVersion,
    start: term.startedAt,
    end,
  }
}

/**
 * The fencing order: per lease, periods sorted by start must not overlap, their fencing tokens
 * (leaseTransitions) must strictly increase, and their resourceVersions too. Returns the problems.
 */
export function checkFencing(periods: Period[]): string[] {
  const problems: string[] = []
  const byLease = new Map<string, Period[]>()
  for (const p of periods) byLease.set(p.lease, [...(byLease.get(p.lease) ?? []), p])
  for (const [lease, ps] of byLease) {
    ps.sort((a, b) => a.start - b.start)
    for (let i = 1; i < ps.length; i++) {
      const a = ps[i - 1],
        b = ps[i]
      if (b.start < a.end)
        problems.push(
          `${lease}: ${b.identity} (token ${b.transitions}) started ${(a.end - b.start).toFixed(1)} ms before ${a.identity} (token ${a.transitions}) stopped`,
        )
      if (!(b.transitions > a.transitions))
        problems.push(`${lease}: token ${b.transitions} of ${b.identity} does not follow ${a.transitions} of ${a.identity}`)
      if (!(Number(b.resourceVersion) > Number(a.resourceVersion)))
        problems.push(`${lease}: resourceVersion ${b.resourceVersion} does not follow ${a.resourceVersion}`)
    }
  }
  return problems
}

const FENCE_PATH = '/api/v1/namespaces/default/configmaps'

/**
 * One fenced action: read the register, refuse to go back in tokens, write ours with the
 * resourceVersion read. An answer that comes after the term's deadline is void. Returns a
 * violation message when an acting leader saw a newer token (someone else acted in its term).
 */
export async function fencedAction(cluster: Cluster, name: string, term: LeaseTerm): Promise<{ wrote: boolean; violation?: string }> {
  if (!term.valid()) return { wrote: false }
  let cur: any
  try {
    cur = await cluster.request({ path: `${FENCE_PATH}/${name}`, signal: term.signal })
  } catch (err) {
    if (!isNotFound(err)) return { wrote: false }
    try {
      await cluster.request({
        method: 'POST',
        path: FENCE_PATH,
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name },
          data: { token: String(term.transitions), identity: term.identity, n: '1' },
        },
        signal: term.signal,
      })
      return { wrote: true }
    } catch {
      return { wrote: false }
    }
  }
  const readDone = wallNow()
  if (!term.valid()) return { wrote: false } // the read came back too late to act on
  const token = Number(cur.data?.token ?? -1)
  if (token > term.transitions) {
    return {
      wrote: false,
      violation: `${term.identity} (token ${term.transitions}) acting at ${readDone.toFixed(1)} found token ${token} of ${cur.data?.identity}`,
    }
  }
  try {
    await cluster.request({
      method: 'PUT',
      path: `${FENCE_PATH}/${name}`,
      signal: term.signal,
      body: { ...cur, data: { token: String(term.transitions), identity: term.identity, n: String(Number(cur.data?.n ?? 0) + 1) } },
    })
    return { wrote: true }
  } catch (err) {
    if (isConflict(err)) return { wrote: false }
    return { wrote: false }
  }
}

/** Runs fenced actions every `everyMs` while the term is valid. */
export async function actWhileLeading(
  cluster: Cluster,
  name: string,
  term: LeaseTerm,
  everyMs: number,
  out: { actions: number; violations: string[] },
): Promise<void> {
  while (term.valid()) {
    const r = await fencedAction(cluster, name, term).catch(() => ({ wrote: false, violation: undefined }))
    if (r.wrote) out.actions++
    if (r.violation) out.violations.push(r.violation)
    await new Promise((res) => setTimeout(res, everyMs))
  }
}

export async function waitUntil(cond: () => boolean, what: string, timeoutMs: number): Promise<number> {
  const end = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
  return wallNow()
}
