// The rows of a topology's graph, as its statedb tables hold them (topology.ts writes them, view.ts
// reads them): nodes, resolved links, the declarations links come from, and policy attachments.
// Invariant: every row carries `source`, the id of the input object it came from, so an object's
// rows are replaced together.
import type { Table } from '@statewright/statedb'
import type { TopologyNode } from './define.ts'

/** A link between two nodes (by locator); `via` is the declaration it resolves ("" for owner -> section). */
export interface StoredLink {
  readonly id: string
  readonly link: number
  readonly parent: string
  readonly child: string
  readonly source: string
  readonly via: string
}
/** A link as a node declared it: `target` is the locator it names, resolved again when that changes. */
export interface Declaration {
  readonly id: string
  readonly link: number
  readonly side: 'parents' | 'children'
  readonly node: string
  readonly target: string
  readonly source: string
}
export interface Attachment {
  readonly id: string
  readonly policy: string
  readonly target: string
  readonly source: string
}

/** The tables of one topology's graph. */
export interface GraphTables {
  nodes: Table<TopologyNode>
  links: Table<StoredLink>
  declarations: Table<Declaration>
  attachments: Table<Attachment>
}
