// Memos: a reconciler that keeps the files of a directory in line with a table (cilium's "memos").
//
//   node --conditions=@statewright/source --import tsx examples/memos.ts
//
// Each row of the `memos` table is a file: its name and its content. Inserting or changing a row
// writes the file, deleting a row removes it, and stray files are pruned once the table has been
// loaded. The script runs a scripted scenario in a temporary directory, prints progress and health
// as they change, then a summary, and exits (in a few seconds). The steps:
//   1. a stray file sits in the directory; memos are loaded; the initializer completes; prune removes the stray
//   2. a memo changes and one is deleted: files follow
//   3. the directory is made read-only: writes and deletes fail, health is degraded, retries back off
//   4. the directory is writable again: the retries succeed, health is ok
//   5. someone edits a file behind our back: a full reconciliation finds it out of sync and repairs it
//
// Read-only and root: root ignores permission bits, so the target checks the directory's write bit
// itself and fails like the kernel would for anyone else (EACCES). The behaviour is the same either way.

import { mkdtemp, readdir, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DB, defineIndex, Table } from '@statewright/statedb'
import {
  InMemoryMetrics,
  newStatusIndex,
  Reconciler,
  statusPending,
  waitForSettled,
  type Operations,
  type Status,
} from '@statewright/reconciler'

interface Memo {
  readonly name: string
  readonly content: string
  readonly status: Status
}

// ---- the desired state: a table ----

const byName = defineIndex<Memo, string>({ name: 'name', key: (m) => m.name, unique: true })
const statusIndex = newStatusIndex<Memo>((m) => m.status)
const memos = new Table<Memo>({ name: 'memos', primary: byName, indexes: [statusIndex] })
const db = new DB({ tables: [memos] })

// ---- the target: a directory ----

const EACCES = (path: string) => Object.assign(new Error(`EACCES: permission denied, ${path}`), { code: 'EACCES' })

function directoryTarget(dir: string): Operations<Memo> {
  const writable = async () => {
    // Root ignores the mode bits; honour them anyway so the example behaves the same for everyone.
    if (((await stat(dir)).mode & 0o200) === 0) throw EACCES(dir)
  }
  return {
    async update(memo) {
      const path = join(dir, memo.name)
      const current = await readFile(path, 'utf8').catch(() => undefined)
      if (current === memo.content) return false // in sync: nothing to do (idempotent)
      await writable()
      await writeFile(path, memo.content)
      return true // the target changed: counts as out of sync during full reconciliation
    },
    async delete(memo) {
      const path = join(dir, memo.name)
      if ((await stat(path).catch(() => undefined)) === undefined) return // already gone: success
      await writable()
      await rm(path, { force: true })
    },
    async prune(desired) {
      const want = new Set<string>()
      for (const m of desired) want.add(m.name)
      for (const file of await readdir(dir)) {
        if (want.has(file)) continue
        await writable()
        await rm(join(dir, file), { force: true })
        log(`  prune: removed stray file ${file}`)
      }
    },
  }
}

// ---- the scenario ----

const started = Date.now()
const log = (msg: string) => console.log(`${((Date.now() - started) / 1000).toFixed(2).padStart(6)}s ${msg}`)

async function write(fn: (txn: Parameters<typeof memos.insert>[0]) => void): Promise<number> {
  const txn = await db.writeTxn(memos)
  fn(txn)
  return memos.revision(txn.commit())
}

const memo = (name: string, content: string): Memo => ({ name, content, status: statusPending() })

async function files(dir: string): Promise<string> {
  const names = (await readdir(dir)).sort()
  const parts = await Promise.all(names.map(async (n) => `${n}=${JSON.stringify(await readFile(join(dir, n), 'utf8'))}`))
  return parts.join(' ') || '(empty)'
}

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'statewright-memos-'))
  const metrics = new InMemoryMetrics()
  const reconciler = new Reconciler<Memo>({
    db,
    table: memos,
    statusIndex,
    getObjectStatus: (m) => m.status,
    setObjectStatus: (m, status) => ({ ...m, status }),
    operations: directoryTarget(dir),
    retry: { minMs: 100, maxMs: 800, jitter: 0.1 },
    fullReconciliationIntervalMs: 60_000,
    metrics,
  })
  reconciler.onHealth((h) => log(`health: ${h.level} (${h.message})`))
  const signal = AbortSignal.timeout(15_000) // the whole scenario, bounded
  let failed = false
  try {
    log(`directory ${dir}`)
    await writeFile(join(dir, 'stray.txt'), 'not in the table')

    log('1. load memos (the table is not initialized until the loader says so: no prune before)')
    const init = await db.writeTxn(memos)
    const loaded = memos.registerInitializer(init, 'loader')
    init.commit()
    reconciler.start()
    const firstFull = reconciler.triggerFullReconciliation() // waits for initialization
    let rev = await write((t) => {
      memos.insert(t, memo('groceries', 'milk, eggs'))
      memos.insert(t, memo('ideas', 'a reconciler for memos'))
      memos.insert(t, memo('todo', 'write docs'))
    })
    await reconciler.waitForRevision(rev, { signal })
    log(`   files: ${await files(dir)}`)
    await write((t) => loaded(t))
    const r1 = await firstFull
    log(`   initialized; full reconciliation: ${r1.updated} updated, ${r1.outOfSync} out of sync`)
    log(`   files: ${await files(dir)}`)

    log('2. change a memo, delete another')
    rev = await write((t) => {
      memos.insert(t, memo('todo', 'write docs, then benchmarks'))
      memos.delete(t, { name: 'ideas' } as Memo)
    })
    await reconciler.waitForRevision(rev, { signal })
    log(`   files: ${await files(dir)}`)

    log('3. make the directory read-only, then insert one memo and delete another')
    await chmod(dir, 0o555)
    rev = await write((t) => {
      memos.insert(t, memo('urgent', 'call the plumber'))
      memos.delete(t, { name: 'groceries' } as Memo)
    })
    await reconciler.waitForRevision(rev, { signal })
    const errors = await waitForSettled(db, memos, statusIndex, { signal })
    for (const m of errors) log(`   error: ${m.name}: ${m.status.error}`)
    for (const f of reconciler.failedDeletes()) log(`   failed delete: ${f.object.name}: ${f.error} (attempt ${f.attempts})`)
    await until(() => reconciler.failures().some((f) => f.attempts >= 3), signal)
    log(
      `   retrying with backoff: ${reconciler
        .failures()
        .map((f) => `${f.object.name} x${f.attempts}`)
        .join(', ')}`,
    )

    log('4. make the directory writable again')
    await chmod(dir, 0o755)
    await until(() => reconciler.failures().length === 0 && reconciler.health().level === 'ok', signal)
    log(`   files: ${await files(dir)}`)

    log('5. someone edits a file behind our back; a full reconciliation repairs it')
    await writeFile(join(dir, 'todo'), 'scribbled over')
    const r2 = await reconciler.triggerFullReconciliation()
    log(`   full reconciliation: ${r2.updated} updated, ${r2.outOfSync} out of sync (repaired)`)

    // ---- summary ----
    const want = memos
      .all(db.readTxn())
      .toArray()
      .map((m) => `${m.name}=${JSON.stringify(m.content)}`)
      .join(' ')
    const have = await files(dir)
    const c = metrics.get(reconciler.name)
    console.log('\nsummary')
    console.log(`  table:     ${want}`)
    console.log(`  directory: ${have}`)
    console.log(`  in sync:   ${want === have ? 'yes' : 'NO'}`)
    console.log(`  health:    ${reconciler.health().level} (${reconciler.health().message})`)
    console.log(
      `  operations: update ${c.operations['update/success']} ok / ${c.operations['update/error']} failed, delete ${c.operations['delete/success']} ok / ${c.operations['delete/error']} failed; prune runs ${c.pruneRuns}; out of sync found ${c.outOfSync}`,
    )
    failed = want !== have || reconciler.health().level !== 'ok'
  } catch (err) {
    console.error('memos example failed:', err)
    failed = true
  } finally {
    await reconciler.stop()
    await chmod(dir, 0o755).catch(() => {})
    await rm(dir, { recursive: true, force: true })
  }
  return failed ? 1 : 0
}

/** Polls a condition that no table watch covers (the retry queue) every 20 ms. */
async function until(cond: () => boolean, signal: AbortSignal): Promise<void> {
  while (!cond()) {
    signal.throwIfAborted()
    await new Promise((r) => setTimeout(r, 20))
  }
}

process.exitCode = await main()
