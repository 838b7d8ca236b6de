// The shapes of the server's JSON that the web view reads (JSDoc only: nothing runs here), and the
// context a view is given. Invariant: these describe what the inspection handler and statedb's HTTP
// handler send (packages/controller/src/inspect/handler.ts, packages/statedb/src/inspect.ts); a
// field the server may leave out is optional here.

/**
 * A table of GET /statedb/tables.
 * @typedef {object} TableInfo
 * @property {string} name
 * @property {number} objects
 * @property {number} revision
 * @property {boolean} initialized
 * @property {string[]} [pendingInitializers]
 * @property {number} graveyard
 * @property {string[]} indexes the primary index first
 */

/**
 * One reconciler's status of an object (an entry's `reconcile[<reconciler>]`).
 * @typedef {object} ReconcileStatus
 * @property {'pending' | 'refreshing' | 'done' | 'error'} kind
 * @property {number} updatedAt
 * @property {string} [error]
 * @property {number} [attempts]
 * @property {number} [retryAt]
 */

/**
 * An object of a table as statedb serves it (a page's element, a `op=get` answer, a change).
 * @typedef {object} Entry
 * @property {string} key the primary key as text
 * @property {number} revision
 * @property {number} [time] when that revision was written (ms), while the times are kept
 * @property {unknown} object redacted
 * @property {Record<string, ReconcileStatus>} [reconcile]
 */

/**
 * A line of /statedb/tables/<t>/changes: an entry (deleted or not), or the end of the backlog.
 * @typedef {(Entry & { deleted?: boolean, sync?: undefined }) | { sync: true, revision: number }} Change
 */

/**
 * A page of a table: its entries in key order; `next` is its last key when more follow.
 * @typedef {object} Page
 * @property {Entry[]} entries
 * @property {string | null} next
 * @property {number} revision
 * @property {number | undefined} count the table's count (unqueried pages only)
 */

/**
 * A reconciler of GET /reconcilers.
 * @typedef {object} ReconcilerInfo
 * @property {string} name
 * @property {string} table
 * @property {boolean} running
 * @property {{ level: string, ready: boolean, message: string }} health
 * @property {Record<string, number>} counts by status kind
 * @property {Array<{ key: string, revision: number, error: string, updatedAt?: number, attempts?: number, retryAt?: number }>} errors
 */

/**
 * A part's health in /statusz.
 * @typedef {object} PartHealth
 * @property {string} [name]
 * @property {string} [level]
 * @property {boolean} [ready]
 * @property {string} [message]
 * @property {string} [state]
 * @property {string} [lastError]
 */

/**
 * GET /statusz (the Manager's).
 * @typedef {object} Statusz
 * @property {string} [name]
 * @property {string} [state]
 * @property {boolean} ready
 * @property {string[]} [reasons]
 * @property {{ leading?: boolean }} [leader]
 * @property {PartHealth[]} [reflectors]
 * @property {PartHealth[]} [derivations]
 * @property {{ name: string, level: string, message: string }} [reconciler]
 * @property {Array<PartHealth & { name: string, level: string }>} [components]
 */

/**
 * A node of a topology graph (statedb's InspectGraph).
 * @typedef {object} GraphNode
 * @property {string} id a locator
 * @property {string} kind
 * @property {string} name
 * @property {string} [namespace]
 * @property {boolean} [policy]
 * @property {string} [status] a policy's status reason
 * @property {unknown} [effective] a targetable's effective policy
 */

/**
 * A component's graph, as GET /topology serves it ({ graphs: NamedGraph[] }).
 * @typedef {object} NamedGraph
 * @property {string} component
 * @property {{ nodes: GraphNode[], edges: Array<{ from: string, to: string, policy?: boolean }> }} graph
 */

/**
 * What a view is given by the router (app.js).
 * @typedef {object} ViewContext
 * @property {HTMLElement} root where the view draws
 * @property {AbortSignal} signal aborted when the view is left
 * @property {(fn: () => void) => void} onLeave runs fn when the view is left
 * @property {(text: string, on?: boolean) => void} setLive the live indicator of the header
 * @property {(err: unknown) => void} fail shows the error (or the token form) in place of the view, unless it was left
 */

/**
 * What a view does when only its selection in the address changes (`o=` of a table, `n=` of the
 * topology): it keeps its page and its stream.
 * @typedef {(key: string | null) => void} Select
 */

export {}
