// Timing whole processes from outside: a fresh child per sample, time from just before spawn to the
// first 200 of its /readyz (polled every 5 ms), RSS from /proc/<pid>/status some time after.
// Shared by the footprint suite and the controller suite's operator part.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

/** VmRSS of a live process, in bytes. */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(m[1]) * 1024
}

export async function readyz(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1000) })
    await res.arrayBuffer()
    return res.status === 200
  } catch {
    return false
  }
}

/** SIGTERM, then SIGKILL after 5 s; resolves when the child is gone. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  const t = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(t)
}

export interface StartSample {
  /** From just before spawn to the first 200 of /readyz. */
  readyzMs: number
  /** VmRSS `settleMs` after /readyz answered. */
  rssBytes: number
}

/**
 * Spawns `node <args>` (with `env`), waits for /readyz on `port` (at most 120 s), waits `settleMs`,
 * reads its RSS, stops it. `onReady` runs between /readyz and the settle (to read more figures).
 */
export async function sampleStart(o: {
  who: string
  args: string[]
  env: NodeJS.ProcessEnv
  cwd: string
  port: number
  settleMs: number
  onReady?: (t0: number) => void
}): Promise<StartSample> {
  const t0 = Date.now()
  const child = spawn(process.execPath, o.args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  try {
    const deadline = Date.now() + 120_000
    let readyAt = 0
    while (!readyAt) {
      if (child.exitCode !== null) throw new Error(`${o.who} exited (${child.exitCode}): ${stderr}`)
      if (Date.now() > deadline) throw new Error(`${o.who}: /readyz not 200 within 120 s: ${stderr}`)
      if (await readyz(o.port)) readyAt = Date.now()
      else await sleep(5)
    }
    o.onReady?.(t0)
    await sleep(o.settleMs)
    return { readyzMs: readyAt - t0, rssBytes: rssOf(child.pid!) }
  } finally {
    await stopChild(child)
  }
}
