// Telling a skipped entry from a removed one, when a watch's revisions jump (issue 29 item 1).
// A KV watch delivers every stream message of its keys in order, so a jump in the sequence is either
// normal (the messages were removed: a newer value of the key with history 1, a purge, a rollup) or a
// loss (nats-server 2.9.10 moves watchers past messages a concurrent purge did not remove, fixed in
// 2.9.12: nats-io/nats-server#3838). The stream answers which: a message still stored at a sequence
// the watch skipped was never delivered.
// Invariants:
// - `skipped` is true as soon as one sequence in the range still holds a message of the watched keys;
// - a range larger than `maxProbe` is not probed message by message: it is reported as skipped (the
//   caller relists, which is always safe);
// - a probe that fails (a timeout, a reconnect) is tried again a few times with backoff; one that
//   still fails counts as skipped: when in doubt, relist.
import type { NatsConnection } from '@nats-io/transport-node'

/** Whether a KV key (the subject after `$KV.<bucket>.`) matches a NATS subject filter with `*` and `>`. */
export function keyMatches(key: string, filter: string): boolean {
  const k = key.split('.')
  const f = filter.split('.')
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return k.length > i
    if (i >= k.length) return false
    if (f[i] !== '*' && f[i] !== k[i]) return false
  }
  return k.length === f.length
}

/**
 * Whether any message in stream sequences [from, to] of bucket `bucket` (keys matching `keys`, all
 * when undefined) is still stored, i.e. was skipped by a watch that delivered `from - 1` then `to + 1`.
 */
export async function skippedInRange(
  nc: NatsConnection,
  bucket: string,
  from: number,
  to: number,
  keys: string[] | undefined,
  opts: { maxProbe?: number; timeoutMs?: number } = {},
): Promise<boolean> {
  if (to < from) return false
  if (to - from + 1 > (opts.maxProbe ?? 256)) return true
  const prefix = `$KV.${bucket}.`
  for (let seq = from; seq <= to; seq++) {
    let res: { message?: { subject?: string }; error?: { code?: number } } | undefined
    for (let attempt = 0; res === undefined; attempt++) {
      try {
        const m = await nc.request(`$JS.API.STREAM.MSG.GET.KV_${bucket}`, JSON.stringify({ seq }), { timeout: opts.timeoutMs ?? 5000 })
        res = m.json()
      } catch {
        if (attempt >= 4) return true
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt))
      }
    }
    if (res.error) {
      if (res.error.code === 404) continue // removed: a normal gap
      return true
    }
    const subject = res.message?.subject ?? ''
    if (!subject.startsWith(prefix)) continue
    const key = subject.slice(prefix.length)
    if (!keys || keys.some((f) => keyMatches(key, f))) return true
  }
  return false
}
