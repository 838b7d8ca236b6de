// An operator on the everyday path: every Backup (a kind declared here, its CRD from the schema) gets
// a CronJob that copies its volume to a bucket on schedule. `spec.pausedUntil` suspends it until then
// (the Backup is requeued for that time), status says Ready and Paused, a webhook refuses a bad
// schedule, and deleting a Backup empties its part of the bucket first (a finalizer; an Event).
//   node --conditions=@statewright/source --import tsx examples/backup-operator.ts --help
import { Type } from '@sinclair/typebox'
import type { V1CronJob } from '@kubernetes/client-node'
import { Manager } from '@statewright/controller'
import { customKind } from '@statewright/controller/crd'
import { CronJob } from '@statewright/k8s/kinds'

export const Backup = customKind({
  group: 'backup.statewright.io',
  kind: 'Backup',
  spec: Type.Object({ schedule: Type.String(), bucket: Type.String(), pausedUntil: Type.Optional(Type.String({ format: 'date-time' })) }),
  status: Type.Object({ cronJob: Type.Optional(Type.String()) }),
  printerColumns: [{ name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' }],
})
/** Where the backups go; empty() deletes those under a prefix and says how many. */
export interface Bucket {
  empty(bucket: string, prefix: string): Promise<number>
}
const badSchedule = (s: string) => (s.trim().split(/\s+/).length === 5 ? undefined : `spec.schedule "${s}" is not a cron schedule`)

export function backupOperator(m: Manager, bucket: Bucket, now = Date.now): Manager {
  const backups = m.watch(Backup)
  m.webhook({ for: Backup, validate: (b) => badSchedule(b.spec.schedule) })
  m.reconcile({
    for: backups,
    owns: [CronJob],
    conditionEvents: ['Ready', 'Paused'], // a pause and its end are Events too (by default only Ready's transitions)
    fn: (b) => {
      const { schedule, pausedUntil } = b.spec
      if (badSchedule(schedule)) throw new Error(badSchedule(schedule)) // objects from before the webhook
      const pausedFor = pausedUntil ? Date.parse(pausedUntil) - now() : 0
      const cronJob: V1CronJob = {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: `backup-${b.metadata.name}`, namespace: b.metadata.namespace },
        spec: {
          schedule,
          suspend: pausedFor > 0,
          jobTemplate: {
            spec: {
              template: {
                spec: {
                  restartPolicy: 'OnFailure',
                  containers: [
                    { name: 'copy', image: 'rclone/rclone:1.68', args: ['copy', '/data', `s3:${b.spec.bucket}/${b.metadata.name}`] },
                  ],
                },
              },
            },
          },
        },
      }
      return {
        children: cronJob,
        status: { cronJob: cronJob.metadata!.name },
        conditions: [
          pausedFor > 0
            ? { type: 'Paused', status: 'True', reason: 'PausedUntil', message: `until ${pausedUntil}` }
            : { type: 'Paused', status: 'False', reason: 'Scheduled', message: schedule },
        ],
        ...(pausedFor > 0 ? { requeueAfterMs: pausedFor } : {}),
      }
    },
  })
  m.finalizer({
    on: backups,
    name: 'backup.statewright.io/empty-bucket',
    cleanup: async (b) => {
      const n = await bucket.empty(b.spec.bucket, `${b.metadata.name}/`)
      m.events.normal(b, 'BucketEmptied', `${n} backups deleted from ${b.spec.bucket}`)
    },
  })
  return m
}
const bucket: Bucket = { empty: async () => 0 } // your object store's client here
/** For `statewright manifests examples/backup-operator.ts --leader-elect`. */
export default () => backupOperator(new Manager({ name: 'backup-operator' }), bucket)
if (import.meta.url === `file://${process.argv[1]}`) await backupOperator(Manager.fromFlags({ name: 'backup-operator' }), bucket).start()
