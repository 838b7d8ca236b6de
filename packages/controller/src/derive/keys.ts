// How a derivation names its inputs: "<from index>:<primary key>" ids, and "<table> <key>" for people.
// Invariant: an input id is unique across the `from` tables (the table's index comes first) and
// stable across runs (a string key as is, any other key as JSON).
import type { Key, Table } from '@statewright/statedb'

/** Where an input is: the index of its `from` table, and its primary key. */
export interface InputRef {
  table: number
  key: Key
}

export const keyString = (k: Key): string => (typeof k === 'string' ? k : JSON.stringify(k))
export const inputId = (table: number, key: Key) => `${table}:${keyString(key)}`

/** An input id as people read it: "<table> <key>". */
export function describeInput(from: ReadonlyArray<Table<any>>, id: string): string {
  const i = id.indexOf(':')
  return `${from[Number(id.slice(0, i))]?.name ?? '?'} ${id.slice(i + 1)}`
}
