// A tour of @statewright/statedb: tables, indexes, transactions, snapshots, watches, change
// iterators and initialization. Run: node --conditions=@statewright/source --import tsx examples/statedb-tour.ts
// (docs/statedb.md walks through it; test/examples.test.ts runs it.)

import { byRevision, DB, defineIndex, Table } from '@statewright/statedb'

interface Memo {
  name: string
  tags: string[]
  body: string
}

// Indexes: a unique primary index, and a non-unique index with any number of keys per object.
const byName = defineIndex<Memo, string>({ name: 'name', key: (m) => m.name, unique: true })
const byTag = defineIndex<Memo, string>({ name: 'tag', keys: (m) => m.tags })

const memos = new Table<Memo>({ name: 'memos', primary: byName, indexes: [byTag] })
const db = new DB({ tables: [memos] })

export async function tour(log: (line: string) => void = console.log): Promise<void> {
  // Writes happen in a transaction; db.write commits when the function returns.
  await db.write(memos, (txn) => {
    memos.insert(txn, { name: 'groceries', tags: ['home', 'todo'], body: 'milk' })
    memos.insert(txn, { name: 'taxes', tags: ['todo'], body: 'file by April' })
  })

  // A snapshot never changes, whatever is written later.
  const snap = db.readTxn()
  log(
    `todo: ${memos
      .list(snap, byTag.query('todo'))
      .toArray()
      .map((m) => m.name)
      .join(', ')}`,
  )

  // A watch fires when what a query returned may have changed.
  const [, watch] = memos.getWatch(snap, byName.query('taxes'))
  const changes = memos.changes(snap) // every object, then every change
  await db.write(memos, (txn) => {
    memos.insert(txn, { name: 'taxes', tags: [], body: 'filed' })
    memos.delete(txn, { name: 'groceries', tags: [], body: '' })
  })
  await watch.wait()
  log(`watch fired; old snapshot still has ${memos.count(snap)} memos, new one ${memos.count(db.readTxn())}`)

  const [batch] = changes.next(db.readTxn())
  for (const c of batch) log(`change r${c.revision}: ${c.deleted ? 'deleted' : 'upserted'} ${c.object.name}`)
  changes.close()

  // Each object carries the revision of its last write: compare-and-swap on it.
  const entry = memos.getEntry(db.readTxn(), byName.query('taxes'))!
  await db.write(memos, (txn) => {
    const swapped = memos.compareAndSwap(txn, entry.revision, { ...entry.object, body: 'filed, refund due' })
    const stale = memos.compareAndSwap(txn, entry.revision, { ...entry.object, body: 'lost update' })
    // a refusal says why: 'notFound', or 'revisionChanged' with the entry stored now
    log(`compare-and-swap: first ${swapped.ok}, second (stale revision) ${stale.ok ? 'written' : stale.reason}`)
  })
  log(
    `written since revision 4: ${memos
      .lowerBound(db.readTxn(), byRevision(4))
      .toArray()
      .map((m) => m.name)
      .join(', ')}`,
  )

  // Initialization: a table is not initialized until its registered initializers are done.
  const txn = await db.writeTxn(memos)
  const done = memos.registerInitializer(txn, 'first-sync')
  txn.commit()
  const [ready, initWatch] = memos.initialized(db.readTxn())
  await db.write(memos, (w) => done(w))
  await initWatch.wait()
  log(`initialized: before ${ready}, after ${memos.initialized(db.readTxn())[0]}`)
}

if (import.meta.url === `file://${process.argv[1]}`) await tour()
