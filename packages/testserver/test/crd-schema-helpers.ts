// Helpers of the CRD-schema tests (structural.test.ts, crd-schema.test.ts): a CRD around a schema,
// and the causes checkCrdSchemas refuses it with, relative to the schema's root.
import { checkCrdSchemas } from '../src/crd-schema.ts'
import { StatusError } from '../src/status.ts'

export const AT = 'spec.versions[0].schema.openAPIV3Schema'
export type S = Record<string, any>

function crd(openAPIV3Schema: S): S {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', kind: 'Widget' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema } }],
    },
  }
}
/** The causes as "field reason: message", the field relative to the schema's root. */
export function causes(schema: S): string[] {
  try {
    checkCrdSchemas(crd(schema))
    return []
  } catch (e) {
    if (!(e instanceof StatusError)) throw e
    return (e.status.details?.causes ?? []).map((c) => `${(c.field ?? '').slice(AT.length).replace(/^\./, '')} ${c.reason}: ${c.message}`)
  }
}
export const atSpec = (spec: S): S => ({ type: 'object', properties: { spec } })
/** Only the fields and reasons (Go's tests match those). */
export const shape = (cs: string[]) => cs.map((c) => c.slice(0, c.indexOf(':'))).sort()
