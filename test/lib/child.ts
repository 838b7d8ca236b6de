// A TypeScript program run as a child process that reports on stdout with one JSON object per line
// (the process tests' replicas and candidates, the sharding bench's replicas). Lines that are not
// JSON are skipped; stderr goes to ours, prefixed with the child's id.
import { spawn, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'

export interface JsonLineChild {
  id: string
  child: ChildProcess
  /** Every JSON line printed so far, in order. */
  lines: Array<Record<string, any>>
  exited: boolean
}

/** Runs `file` (TypeScript, from source) with `arg` as its JSON argv[2]; `nodeArgs` go before the loader. */
export function spawnJsonLines(id: string, file: string, arg: unknown, nodeArgs: string[] = []): JsonLineChild {
  const child = spawn(process.execPath, [...nodeArgs, '--conditions=@statewright/source', '--import', 'tsx', file, JSON.stringify(arg)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const p: JsonLineChild = { id, child, lines: [], exited: false }
  let buf = ''
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let i; (i = buf.indexOf('\n')) >= 0;) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      try {
        p.lines.push(JSON.parse(line))
      } catch {
        /* not a line of ours */
      }
    }
  })
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${id}] ${d}`))
  child.on('exit', () => (p.exited = true))
  return p
}

/** Loads the machine: one busy process per core (at least two). Returns what stops them (idempotent). */
export function loadEveryCore(): () => void {
  const busy = Array.from({ length: Math.max(2, availableParallelism()) }, () =>
    spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }),
  )
  return () => {
    for (const b of busy) b.kill('SIGKILL')
  }
}
