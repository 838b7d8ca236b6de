// One error root: what statedb throws is a StatewrightError with a code, statedb's own failures a
// StateDBError subclass naming the table, index and key it concerns; the root and the four shared
// classes (ConfigError, UsageError, StoppedError, TimeoutError) are defined here for every package.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  DB,
  Table,
  defineIndex,
  DefinitionError,
  QueryError,
  KeyError,
  IndexKeyError,
  UniqueConflictError,
  TxnError,
  StateDBError,
  Query,
  StatewrightError,
  ConfigError,
  UsageError,
  StoppedError,
  TimeoutError,
  InternalError,
  waitAny,
} from '@statewright/statedb'

const thrown = (fn: () => unknown): StateDBError => {
  try {
    fn()
  } catch (err) {
    assert.instance(err, StateDBError)
    return err as StateDBError
  }
  throw new Error('expected a throw')
}
const byName = defineIndex<{ name: string; tag?: unknown }, string>({ name: 'name', key: (o) => o.name, unique: true })

test('definition, query, key, index key, unique and txn errors: classes, codes and names', async () => {
  let e = thrown(() => defineIndex({ name: '9bad', key: (o: { a: string }) => o.a }))
  assert.instance(e, DefinitionError)
  assert.is(e.code, 'Definition')
  assert.match(e.message, /invalid index name "9bad"/)
  e = thrown(() => new DB({ tables: [new Table({ name: 'bad name', primary: byName })] }))
  assert.instance(e, DefinitionError)
  const byTag = defineIndex<{ name: string; tag?: unknown }, string>({ name: 'tag', key: (o) => o.tag as string })
  const t = new Table<{ name: string; tag?: unknown }>({ name: 'things', primary: byName, indexes: [byTag] })
  const db = new DB({ tables: [t] })
  e = thrown(() => db.register(new Table({ name: 'things', primary: byName })))
  assert.instance(e, DefinitionError)
  assert.match(e.message, /"things" is already registered/)
  e = thrown(() => t.get(db.readTxn(), new Query('nope', 'x')))
  assert.instance(e, QueryError)
  assert.is(e.code, 'Query')
  assert.match(e.message, /table "things" has no index "nope"/)
  e = thrown(() => t.get(db.readTxn(), byTag.query(Number.NaN as never)))
  assert.instance(e, KeyError)
  assert.is(e.code, 'InvalidKey')
  const w = await db.writeTxn(t)
  t.insert(w, { name: 'a', tag: 'x' })
  e = thrown(() => t.insert(w, { name: 'b', tag: { not: 'a key' } }))
  assert.instance(e, IndexKeyError)
  assert.is(e.code, 'IndexKey')
  assert.match(e.message, /table "things", index "tag"/)
  w.abort()
  const unique = new Table<{ name: string; id: string }>({
    name: 'u',
    primary: defineIndex({ name: 'name', key: (o: { name: string }) => o.name, unique: true }),
    indexes: [defineIndex({ name: 'id', key: (o: { id: string }) => o.id, unique: true })],
  })
  const db2 = new DB({ tables: [unique] })
  const w2 = await db2.writeTxn(unique)
  unique.insert(w2, { name: 'a', id: '1' })
  e = thrown(() => unique.insert(w2, { name: 'b', id: '1' }))
  assert.instance(e, UniqueConflictError)
  assert.is(e.code, 'UniqueConflict')
  w2.commit()
  e = thrown(() => unique.insert(w2, { name: 'c', id: '2' }))
  assert.instance(e, TxnError)
  assert.is(e.code, 'Txn')
  assert.is(unique.count(db2.readTxn()), 1, 'the aborted and failed writes left no trace')
})

test('the root: every statedb error is a StatewrightError; the four shared classes have their codes and names', async () => {
  const definition = thrown(() => new Table({ name: 'bad name', primary: byName }))
  assert.instance(definition, StatewrightError)
  for (const cls of [StateDBError, DefinitionError, QueryError, KeyError, IndexKeyError, UniqueConflictError, TxnError, InternalError])
    assert.ok(cls.prototype instanceof StatewrightError, `${cls.name} extends StatewrightError`)
  const cause = new Error('the port is taken')
  const shared: Array<[StatewrightError, string, string]> = [
    [new ConfigError('bad option', { cause }), 'Config', 'ConfigError'],
    [new UsageError('wrong time'), 'Usage', 'UsageError'],
    [new StoppedError('stopped'), 'Stopped', 'StoppedError'],
    [new TimeoutError('too late'), 'Timeout', 'TimeoutError'],
  ]
  for (const [e, code, name] of shared) {
    assert.instance(e, StatewrightError)
    assert.instance(e, Error)
    assert.not.instance(e, StateDBError, `${name} is shared by every package, not statedb's own`)
    assert.is(e.code, code)
    assert.is(e.name, name)
    assert.ok(String(e.stack).startsWith(`${name}: `), 'the stack names the class')
  }
  assert.is(shared[0]![0].cause, cause, 'the cause is kept')
  // a wrong call is the shared UsageError (it was a StateDBError with code 'Usage' and no class)
  const usage = await waitAny([]).then(
    () => assert.unreachable('waitAny([]) resolved'),
    (err: unknown) => err,
  )
  assert.instance(usage, UsageError)
  assert.is((usage as UsageError).code, 'Usage')
  assert.match((usage as Error).message, 'no watches to wait on')
})

test.run()
