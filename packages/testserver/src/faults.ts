// Fault injection rules and the seeded PRNG that decides them.
// Invariants: with a seed, the sequence of decisions depends only on the order of requests (one PRNG
// draw per request that a ratio rule matches), so a test run is reproducible; rules with `count`
// stop after that many hits; rules apply before any handler runs.

/** mulberry32: tiny, fast, good enough for deciding faults; deterministic for a given seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface RouteMatch {
  /** Substring of the path, or a RegExp tested against the path (no query). Default: every path. */
  path?: string | RegExp
  /** HTTP method(s), e.g. 'GET' or ['POST', 'PUT']. Default: all. */
  method?: string | string[]
  /** Only watch requests (true) or only non-watch requests (false). Default: both. */
  watch?: boolean
}
export interface FailRule extends RouteMatch {
  /** Share of matching requests to fail, 0..1 (default 1). */
  ratio?: number
  /** 500, 503, 429, ... (default 500). */
  status?: number
  /** For 429 (and 503): the Retry-After header, in seconds (default 1). */
  retryAfterSeconds?: number
  /** Stop after failing this many requests. */
  count?: number
}
export interface DelayRule extends RouteMatch {
  ms: number
  ratio?: number
  count?: number
}

interface Live<R> {
  rule: R
  hits: number
}

export interface RequestInfo {
  method: string
  path: string
  watch: boolean
}

function matches(r: RouteMatch, q: RequestInfo): boolean {
  if (r.method !== undefined) {
    const ms = Array.isArray(r.method) ? r.method : [r.method]
    if (!ms.some((m) => m.toUpperCase() === q.method)) return false
  }
  if (r.watch !== undefined && r.watch !== q.watch) return false
  if (r.path === undefined) return true
  return typeof r.path === 'string' ? q.path.includes(r.path) : r.path.test(q.path)
}

export class Faults {
  private rand: () => number
  private fails: Array<Live<FailRule>> = []
  private delays: Array<Live<DelayRule>> = []

  constructor(seed = 1) {
    this.rand = prng(seed)
  }

  reseed(seed: number): void {
    this.rand = prng(seed)
  }

  failRequests(rule: FailRule): () => void {
    const live = { rule, hits: 0 }
    this.fails.push(live)
    return () => {
      this.fails = this.fails.filter((x) => x !== live)
    }
  }
  delayResponses(rule: DelayRule): () => void {
    const live = { rule, hits: 0 }
    this.delays.push(live)
    return () => {
      this.delays = this.delays.filter((x) => x !== live)
    }
  }
  clear(): void {
    this.fails = []
    this.delays = []
  }

  private pick<R extends RouteMatch & { ratio?: number; count?: number }>(list: Array<Live<R>>, q: RequestInfo): R | undefined {
    for (const l of list) {
      if (!matches(l.rule, q)) continue
      if (l.rule.count !== undefined && l.hits >= l.rule.count) continue
      const ratio = l.rule.ratio ?? 1
      if (ratio < 1 && this.rand() >= ratio) continue
      l.hits++
      return l.rule
    }
    return undefined
  }
  /** The failure to answer this request with, if any. */
  failureFor(q: RequestInfo): FailRule | undefined {
    return this.fails.length ? this.pick(this.fails, q) : undefined
  }
  /** Milliseconds to hold this request before handling it. */
  delayFor(q: RequestInfo): number {
    return this.delays.length ? (this.pick(this.delays, q)?.ms ?? 0) : 0
  }
}
