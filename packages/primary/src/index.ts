// @statewright/primary: a primary/secondary controller (Kumori's controllerruntime): primaries in a
// statedb table (reflected from a NATS KV bucket or a cluster), secondaries written with owner stamps
// through a SecondaryTarget (a cluster: @statewright/k8s's KubeSecondaries; a bucket:
// @statewright/nats's KvSecondaries), status written back, orphans collected, events recorded.
// The one public face of the package.
export { PrimaryController } from './controller.ts'
export type { OwnedRef, Work as PrimaryWork } from './work.ts'
export type { PrimaryControllerOptions, PrimaryControllerStats, PrimaryHealth, SyncContext, SyncResult } from './options.ts'
export { ownerKeyLabelValue, ownerStampKeys } from './stamps.ts'
export {
  StatewrightError,
  ConfigError,
  UsageError,
  StoppedError,
  TimeoutError,
  PrimaryError,
  SyncError,
  type PrimaryErrorCode,
} from './errors.ts'
// the contract with the places it writes to (@statewright/k8s and @statewright/nats implement it)
export type {
  EventSink,
  InvolvedObject,
  OwnerStamps,
  PrimaryStatusWriter,
  SecondarySpec,
  SecondaryTarget,
  SecondaryWriteResult,
} from './contract.ts'
