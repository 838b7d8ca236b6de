// The types of a custom kind's schemas and objects, shared by the kind (customkind.ts) and its
// versions (versions.ts): a schema's static type is read from the `static` member every TypeBox
// schema type carries (no import of TypeBox), and an object is metadata, the spec's type and the
// status's type with the conditions Manager.reconcile writes.
import type { KubeObject } from '@statewright/k8s'
import type { Condition } from '../conditions.ts'

/** A schema whose static type is known (any TypeBox schema), or a plain JSON Schema object. */
export type SchemaLike = object
/** The static type of a TypeBox schema (unknown for a plain JSON Schema). */
export type StaticOf<S> = S extends { static: infer T } ? T : unknown

export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date'
  jsonPath: string
  description?: string
  priority?: number
}

/** The objects of a custom kind: metadata, the spec's type, the status's type with its conditions. */
export type CustomObject<Spec extends SchemaLike, Status extends SchemaLike | undefined> = KubeObject & {
  apiVersion: string
  kind: string
  spec: StaticOf<Spec>
  status?: (Status extends SchemaLike ? StaticOf<Status> : {}) & { observedGeneration?: number; conditions?: Condition[] }
}
