// Bounded waits for tests, shared by every package's tests (a test helper, not a package: tests
// import it by path, as they import bench/lib/rng.ts).
import { waitAny, type DB, type ReadTxn, type Table } from '@statewright/statedb'

/** Waits until `cond(txn)` holds, re-checking whenever one of the tables changes; fails after timeoutMs. */
export async function waitTable(
  db: DB,
  tables: Table<any> | ReadonlyArray<Table<any>>,
  cond: (txn: ReadTxn) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const list: ReadonlyArray<Table<any>> = Array.isArray(tables) ? tables : [tables as Table<any>]
  const signal = AbortSignal.timeout(timeoutMs)
  for (;;) {
    const txn = db.readTxn()
    if (cond(txn)) return
    try {
      await waitAny(
        list.map((t) => t.allWatch(txn)[1]),
        signal,
      )
    } catch {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    }
  }
}

/** Polls `cond` every 10 ms, for what no table or watch covers; fails after timeoutMs. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
