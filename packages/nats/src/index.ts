// @statewright/nats: NATS JetStream key-value buckets for statewright. A reflector mirrors a bucket
// into a statedb table; a target gives the reconciler CAS writes into a bucket; KvSecondaries and
// KvStatusWriter plug a bucket into @statewright/primary's PrimaryController; startNatsServer
// runs a nats-server for tests. The one public face of the package; docs/nats.md explains it.
export { NatsKvReflector } from './reflector.ts'
export type { KvRow, NatsKvReflectorOptions, NatsMetrics } from './reflector-options.ts'
export type { NatsKvReflectorHealth, NatsReflectorState } from './reflector-health.ts'
export {
  NatsKvTarget,
  newDesiredKvTable,
  desiredKv,
  isCasConflict,
  listEntries,
  metadataOf,
  withMetadata,
  type DesiredKv,
  type DesiredKvTable,
  type NatsKvTargetOptions,
  type NatsKvTargetStats,
} from './target.ts'
export { KvSecondaries, KvStatusWriter, type KvObject } from './secondaries.ts'
export { startNatsServer, natsServerBinary, type NatsServerOptions, type RunningNatsServer } from './server.ts'
export {
  StatewrightError,
  ConfigError,
  StoppedError,
  TimeoutError,
  UsageError,
  NatsError,
  BucketError,
  DecodeError,
  WriteError,
  ServerError,
  type StatewrightErrorCode,
  type NatsErrorCode,
} from './errors.ts'
