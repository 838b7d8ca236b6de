// A custom kind with three versions, after controller-runtime's conversion test data
// (pkg/webhook/conversion/testdata: ExternalJob v1, v2 the hub, v3): the same field under three names
// (runAt, scheduleAt, deferredAt). v1 lacks the hub's `retries`, so v1's fromHub keeps it in an
// annotation and toHub restores it (kubebuilder's advice for lossy conversions); v2beta1 has the
// hub's schemas. Shared by conversion.test.ts and tests that drive a server's /convert.
import { Type } from '@sinclair/typebox'
import { customKind } from '@statewright/controller/crd'

export const RETRIES_ANNOTATION = 'jobs.example.com/v2-retries'

const JobSpecV2 = Type.Object({ scheduleAt: Type.String(), retries: Type.Optional(Type.Integer({ minimum: 0 })) })
const JobStatusV2 = Type.Object({ lastRunAt: Type.Optional(Type.String()) })
const JobSpecV1 = Type.Object({ runAt: Type.String() })
const JobStatusV1 = Type.Object({ lastRun: Type.Optional(Type.String()) })
const JobSpecV3 = Type.Object({ deferredAt: Type.String(), retries: Type.Optional(Type.Integer({ minimum: 0 })) })

/** Annotations without `key` (none at all when that empties them). */
function without(annotations: Record<string, string> | undefined, key: string): { annotations?: Record<string, string> } {
  if (!annotations) return {}
  const { [key]: _, ...rest } = annotations
  return Object.keys(rest).length ? { annotations: rest } : {}
}

export const ExternalJob = customKind({
  group: 'jobs.example.com',
  version: 'v2',
  kind: 'ExternalJob',
  spec: JobSpecV2,
  status: JobStatusV2,
  conditions: false,
})
  .withVersion('v1', {
    spec: JobSpecV1,
    status: JobStatusV1,
    deprecated: true,
    deprecationWarning: 'jobs.example.com/v1 ExternalJob is deprecated; use v2',
    toHub: (j) => {
      if (j.spec.runAt === 'explode') throw new Error('runAt "explode" cannot be converted')
      const { annotations, ...metadata } = j.metadata
      const kept = annotations?.[RETRIES_ANNOTATION]
      return {
        metadata: { ...metadata, ...without(annotations, RETRIES_ANNOTATION) },
        spec: { scheduleAt: j.spec.runAt, ...(kept !== undefined ? { retries: Number(kept) } : {}) },
        ...(j.status ? { status: j.status.lastRun !== undefined ? { lastRunAt: j.status.lastRun } : {} } : {}),
      }
    },
    fromHub: (j) => ({
      metadata:
        j.spec.retries === undefined
          ? j.metadata
          : { ...j.metadata, annotations: { ...j.metadata.annotations, [RETRIES_ANNOTATION]: String(j.spec.retries) } },
      spec: { runAt: j.spec.scheduleAt },
      ...(j.status ? { status: j.status.lastRunAt !== undefined ? { lastRun: j.status.lastRunAt } : {} } : {}),
    }),
  })
  .withVersion('v3', {
    spec: JobSpecV3,
    status: JobStatusV2,
    toHub: (j) => ({ ...j, spec: { scheduleAt: j.spec.deferredAt, ...(j.spec.retries !== undefined ? { retries: j.spec.retries } : {}) } }),
    fromHub: (j) => ({
      ...j,
      spec: { deferredAt: j.spec.scheduleAt, ...(j.spec.retries !== undefined ? { retries: j.spec.retries } : {}) },
    }),
  })
  .withVersion('v2beta1', { sameSchemaAsHub: true, served: true })
