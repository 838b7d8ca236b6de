// The inspection commands of `statewright` (tables, show, watch, status, health, topology): a client
// of a running process's read-only HTTP endpoints (the Manager's server, or inspectHandler alone).
// Invariants: nothing here writes; colour only on a terminal and never with NO_COLOR or --no-color;
// every command exits 0 on success, 1 on a failure it reports (health: not ready), 2 on bad usage;
// no text from the server reaches the terminal raw: cells, trees and messages show it through
// forTerminal or visible, JSON and YAML escape it (terminal.ts), and stdout and stderr are guarded
// writers besides. Errors: bad usage is the shared UsageError (exit 2), a failure to read the process
// an InspectError (exit 1), from errors.ts (the CLI loads no @statewright/k8s to report either).
// How the output looks (columns, rows, trees) is inspect-format.ts.
import { parseArgs } from 'node:util'
import { UsageError } from '@statewright/statedb'
import { InspectError } from './errors.ts'
import { forTerminal, guarded, jsonText, visible, visibleLines } from './terminal.ts'
import {
  columns,
  dumpAs,
  fixedRow,
  header,
  level,
  paint,
  retryIn,
  row,
  shapeOf,
  tree,
  width,
  type Entry,
  type Paint,
  type Shape,
} from './inspect-format.ts'

export const INSPECT_USAGE = `  tables                                   tables: objects, revision, initialized, graveyard
  show <table> [--index I --key K | --prefix P] [-o table|json|yaml] [--limit N]
                                           objects (kubectl-like columns; age from the revision's time)
  watch <table> [-o table|json]            the objects, then every change live, deletes included
  status [<reconciler>] [--errors]         objects by reconcile status; errors with message,
                                           attempts and next retry (--errors: only those)
  health                                   readiness and every part's health (exit 1: not ready)
  topology [--dot|--svg]                   the graphs of gateways, routes and policies
options of these: --url URL (default $STATEWRIGHT_URL or http://127.0.0.1:8080), --token T
  (default $STATEWRIGHT_TOKEN), --no-color`

export const INSPECT_COMMANDS = new Set(['tables', 'show', 'watch', 'status', 'health', 'topology'])

/** Where the CLI writes (process.stdout, process.stderr, or a test's buffer). */
export interface CliOutput {
  write(s: string): unknown
  isTTY?: boolean
}
export interface CliIO {
  stdout: CliOutput
  stderr: CliOutput
  env: NodeJS.ProcessEnv
  signal?: AbortSignal
}

/** Runs one inspection command; resolves to the exit code. */
export async function runInspect(cmd: string, args: string[], io: CliIO): Promise<number> {
  const stderr = guarded(io.stderr, false)
  let values: Record<string, string | boolean | undefined>
  let positionals: string[]
  try {
    ;({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        'no-color': { type: 'boolean' },
        index: { type: 'string' },
        key: { type: 'string' },
        prefix: { type: 'string' },
        output: { type: 'string', short: 'o' },
        limit: { type: 'string' },
        errors: { type: 'boolean' },
        dot: { type: 'boolean' },
        svg: { type: 'boolean' },
      },
    }))
  } catch (err) {
    stderr.write(`statewright ${cmd}: ${visible((err as Error).message)}\n${INSPECT_USAGE}\n`)
    return 2
  }
  const color = !!io.stdout.isTTY && io.env.NO_COLOR === undefined && !values['no-color']
  const stdout = guarded(io.stdout, color)
  const c = paint(color)
  const base = String(values.url ?? io.env.STATEWRIGHT_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
  const token = (values.token as string | undefined) ?? io.env.STATEWRIGHT_TOKEN
  const get = async (path: string): Promise<Response> => {
    let r: Response
    try {
      r = await fetch(base + path, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        ...(io.signal ? { signal: io.signal } : {}),
      })
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      throw new InspectError(
        `cannot reach ${base} (${((err as Error).cause as Error)?.message ?? (err as Error).message}); is the process running? (--url)`,
        { cause: err },
      )
    }
    if (r.status === 401) throw new InspectError(`${base} wants a token: --token T or STATEWRIGHT_TOKEN`)
    return r
  }
  const getJson = async (path: string): Promise<any> => {
    const r = await get(path)
    const body = await r.text()
    if (!r.ok) throw new InspectError(`${path}: ${r.status} ${safeError(body)}`)
    return JSON.parse(body)
  }
  const out = (s: string) => stdout.write(s)
  const format = String(values.output ?? 'table')
  if (!['table', 'json', 'yaml'].includes(format)) {
    stderr.write(`statewright ${cmd}: -o takes table, json or yaml\n`)
    return 2
  }

  try {
    if (cmd === 'tables') {
      const raw = (await getJson('/statedb/tables')) as Array<{
        name: string
        objects: number
        revision: number
        initialized: boolean
        graveyard: number
        indexes: string[]
      }>
      if (format !== 'table') return (void out(dumpAs(format, raw)), 0)
      const tables = forTerminal(raw)
      out(
        columns(
          c,
          ['NAME', 'OBJECTS', 'REVISION', 'INITIALIZED', 'GRAVEYARD', 'INDEXES'],
          tables.map((t) => [
            t.name,
            String(t.objects),
            String(t.revision),
            t.initialized ? 'yes' : c.yellow('no'),
            String(t.graveyard),
            t.indexes.join(','),
          ]),
        ),
      )
      return 0
    }
    if (cmd === 'show' || cmd === 'watch') {
      const table = positionals[0]
      if (!table) throw new UsageError(`${cmd} needs a table (statewright tables lists them)`)
      if (cmd === 'watch') return await watch(table, format, c, get, out, io.signal)
      const q = new URLSearchParams()
      if (values.prefix !== undefined) {
        const tables = (await getJson('/statedb/tables')) as Array<{ name: string; indexes: string[] }>
        const t = tables.find((x) => x.name === table)
        if (!t) throw new InspectError(`no table "${table}" (tables: ${tables.map((x) => x.name).join(', ')})`)
        q.set('index', String(values.index ?? t.indexes[0]))
        q.set('key', String(values.prefix))
        q.set('op', 'prefix')
      } else if (values.index !== undefined || values.key !== undefined) {
        if (values.index === undefined || values.key === undefined) throw new UsageError('--index and --key go together')
        q.set('index', String(values.index))
        q.set('key', String(values.key))
      }
      const limit = values.limit === undefined ? Infinity : Number(values.limit)
      if (!(limit > 0)) throw new UsageError('--limit takes a positive number')
      const entries: Entry[] = []
      let resume: [string, string] | undefined
      do {
        const p = new URLSearchParams(q)
        p.set('limit', String(Math.min(1000, limit - entries.length)))
        if (resume) p.set(...resume)
        const r = await get(`/statedb/tables/${encodeURIComponent(table)}?${p}`)
        const body = await r.text()
        if (!r.ok) throw new InspectError(`${r.status} ${safeError(body)}`)
        entries.push(...(JSON.parse(body) as Entry[]))
        resume = nextPage(r.headers)
      } while (resume && entries.length < limit)
      if (format !== 'table') return (void out(dumpAs(format, entries)), 0)
      const shape = shapeOf(entries)
      out(
        columns(
          c,
          header(shape, false),
          entries.map((e) => row(shape, e, c, undefined)),
        ),
      )
      return 0
    }
    if (cmd === 'status') {
      const name = positionals[0]
      const raw = (
        name ? [await getJson(`/reconcilers/${encodeURIComponent(name)}?errors=1000`)] : await getJson('/reconcilers?errors=1000')
      ) as Array<{
        name: string
        table: string
        health: { level: string; message: string }
        counts: Record<string, number>
        errors: Array<{ key: string; error: string; attempts?: number; retryAt?: number }>
        failedDeletes: Array<{ key: string; error: string; attempts: number; retryAt: number }>
      }>
      if (format !== 'table')
        return (
          void out(
            dumpAs(format, values.errors ? raw.map((r) => ({ name: r.name, errors: r.errors, failedDeletes: r.failedDeletes })) : raw),
          ),
          0
        )
      const list = forTerminal(raw)
      if (list.length === 0) out('no reconcilers\n')
      for (const r of list) {
        const errs = [...r.errors.map((e) => ({ ...e, what: 'update' })), ...r.failedDeletes.map((e) => ({ ...e, what: 'delete' }))]
        if (!values.errors) {
          out(`${c.bold(`reconciler ${r.name}`)} (table ${r.table}): ${level(c, r.health.level)}\n`)
          out(
            `  ${c.green(`done ${r.counts.done ?? 0}`)}  ${c.yellow(`pending ${(r.counts.pending ?? 0) + (r.counts.refreshing ?? 0)}`)}  ${(r.counts.error ?? 0) ? c.red(`error ${r.counts.error}`) : `error 0`}${r.failedDeletes.length ? `  ${c.red(`failed deletes ${r.failedDeletes.length}`)}` : ''}\n`,
          )
        }
        if (errs.length) {
          out(
            columns(
              c,
              ['OBJECT', 'OP', 'ATTEMPTS', 'NEXT RETRY', 'ERROR'],
              errs.map((e) => [e.key, e.what, String(e.attempts ?? ''), e.retryAt ? retryIn(e.retryAt) : '', c.red(e.error)]),
              values.errors ? '' : '  ',
            ),
          )
        } else if (values.errors) out(`reconciler ${r.name}: no errors\n`)
      }
      return 0
    }
    if (cmd === 'health') {
      const ready = await get('/readyz')
      const readyText = await ready.text()
      const rawSt = (await getJson('/statusz').catch(() => undefined)) as any
      if (format !== 'table') return (void out(dumpAs(format, rawSt ?? { ready: ready.ok, message: readyText })), ready.ok ? 0 : 1)
      const st = forTerminal(rawSt)
      out(
        `${ready.ok ? c.green('ready') : c.red('not ready')}${st?.name ? ` (${st.name}, ${st.state}${st.leader ? `, ${st.leader.leading ? 'leading' : 'not leading'}` : ''})` : ''}\n`,
      )
      const reasons = readyText.split('\n').filter((l) => l.startsWith('- '))
      if (!ready.ok) out(reasons.map((l) => `  ${visible(l)}\n`).join(''))
      if (st) {
        const rows: string[][] = []
        for (const r of st.reflectors ?? [])
          rows.push([`reflector ${r.name ?? ''}`, level(c, r.ready ? 'ok' : 'degraded'), r.lastError ?? r.state ?? ''])
        for (const d of st.derivations ?? [])
          rows.push([`derivation ${d.name}`, level(c, d.level ?? (d.ready ? 'ok' : 'degraded')), d.message ?? ''])
        if (st.reconciler) rows.push([`reconciler ${st.reconciler.name}`, level(c, st.reconciler.level), st.reconciler.message ?? ''])
        for (const d of st.drift ?? []) rows.push([`drift ${d.name ?? ''}`, level(c, d.level ?? 'ok'), d.message ?? ''])
        for (const x of st.components ?? []) rows.push([x.name, level(c, x.level), x.message ?? ''])
        out(columns(c, ['PART', 'HEALTH', 'MESSAGE'], rows))
      }
      return ready.ok ? 0 : 1
    }
    if (cmd === 'topology') {
      if (values.dot || values.svg) {
        const r = await get(`/topology?format=${values.dot ? 'dot' : 'svg'}`)
        const body = await r.text()
        if (!r.ok) throw new InspectError(`${r.status} ${safeError(body)}`)
        out(visibleLines(body))
        return 0
      }
      const { graphs: raw } = (await getJson('/topology')) as {
        graphs: Array<{ component: string; graph: { nodes: any[]; edges: Array<{ from: string; to: string; policy?: boolean }> } }>
      }
      if (format !== 'table') return (void out(dumpAs(format, raw)), 0)
      const graphs = forTerminal(raw)
      if (graphs.length === 0) {
        out('no component here has a topology\n')
        return 0
      }
      for (const { component, graph } of graphs) out(`${c.bold(component)}\n${tree(graph, c)}`)
      return 0
    }
    throw new UsageError(`unknown command "${cmd}"`)
  } catch (err) {
    if (err instanceof UsageError) {
      stderr.write(`statewright ${cmd}: ${visible(err.message)}\n${INSPECT_USAGE}\n`)
      return 2
    }
    if ((err as Error).name === 'AbortError') return 0
    stderr.write(`statewright ${cmd}: ${visible((err as Error).message)}\n`)
    return 1
  }
}

async function watch(
  table: string,
  format: string,
  c: Paint,
  get: (p: string) => Promise<Response>,
  out: (s: string) => void,
  signal: AbortSignal | undefined,
): Promise<number> {
  const r = await get(`/statedb/tables/${encodeURIComponent(table)}/changes`)
  if (!r.ok) throw new InspectError(`${r.status} ${safeError(await r.text())}`)
  const seen = new Set<string>()
  let shape: Shape | undefined
  let buf = ''
  const decoder = new TextDecoder()
  const batch: Entry[] = []
  const flush = () => {
    if (batch.length === 0) return
    if (format === 'json') {
      for (const e of batch) out(jsonText(e) + '\n')
      batch.length = 0
      return
    }
    if (!shape) {
      // column widths from the first batch (as kubectl's): wider values later just push the line
      shape = shapeOf(batch)
      const head = header(shape, true)
      const first = batch.map((e) => row(shape!, e, c, 'MODIFIED'))
      shape.widths = head.map((h, i) => Math.max(h.length, ...first.map((r) => width(r[i] ?? ''))))
      out(c.bold(fixedRow(shape, head)) + '\n')
    }
    for (const e of batch) {
      const event = e.deleted ? 'DELETED' : seen.has(e.key) ? 'MODIFIED' : 'ADDED'
      if (e.deleted) seen.delete(e.key)
      else seen.add(e.key)
      out(fixedRow(shape, row(shape, e, c, event)) + '\n')
    }
    batch.length = 0
  }
  try {
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      if (signal?.aborted) break
      buf += decoder.decode(chunk, { stream: true })
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        if (line) batch.push(JSON.parse(line) as Entry)
      }
      flush()
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err
  }
  return 0
}

/** A failed request's message: the server's `error`, else the body's start (escapes shown). */
const safeError = (body: string) => {
  try {
    return visible(String(JSON.parse(body).error ?? body))
  } catch {
    return visible(body.slice(0, 200))
  }
}
/** The query of the next page: `continue=<token>`, or `after=<key>` from a server before x-statedb-continue. */
function nextPage(h: Headers): [string, string] | undefined {
  const token = h.get('x-statedb-continue')
  if (token !== null) return ['continue', token]
  const after = h.get('x-statedb-next')
  return after === null ? undefined : ['after', after]
}
