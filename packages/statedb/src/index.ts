// @statewright/statedb: an in-memory transactional database of immutable objects.
// The one public face of the package.

export { DB, type DBMetrics, type DBOptions, type TableArg, type TableStats } from './db.ts'
export { Table, type SwapResult, type TableOptions } from './table.ts'
export type { TableBatch } from './batch.ts'
export { ReadTxn, WriteTxn, type Txn } from './txn.ts'
export { defineIndex, byRevision, Index, Query, type IndexOptions } from './indexes.ts'
export type { Key, KeyPart } from './encoding.ts'
export { Entry } from './state.ts'
export { Results } from './results.ts'
export { Watch, WatchSet, waitAny } from './watch.ts'
export { ChangeIterator, type Change, type ChangeOptions } from './changes.ts'
export {
  StatewrightError,
  ConfigError,
  UsageError,
  StoppedError,
  TimeoutError,
  type StatewrightErrorCode,
  StateDBError,
  DefinitionError,
  QueryError,
  KeyError,
  IndexKeyError,
  UniqueConflictError,
  TxnError,
  InternalError,
  type StateDBErrorCode,
} from './errors.ts'
export { setValidation } from './validate.ts'
// The ground floor every package stands on: the lifecycle contract, logging, optional peers, retries.
export type { Lifecycle, Health, HealthLevel } from './lifecycle.ts'
export { logTo, type Logger, type LogFn } from './logger.ts'
export {
  SPAN_ERROR,
  SPAN_OK,
  causeOf,
  inSpan,
  recordError,
  rememberCause,
  resolveTracer,
  validSpanContext,
  type SpanContextLike,
  type SpanLike,
  type SpanOptionsLike,
  type SpanStart,
  type TracerLike,
} from './tracing.ts'
export { loadOptionalPeer, requireOptionalPeer, type OptionalPeerOptions } from './peers.ts'
export { backoffDelay, resolveRetry, DEFAULT_RETRY, type RetryOptions } from './retry.ts'
// Not an export: loaded for its effect (./shapes.ts says why).
import './shapes.ts'
export { dump, httpHandler, keyText, type HttpHandlerOptions } from './inspect.ts'
export {
  redactSecrets,
  markSensitive,
  addRedactionRule,
  SENSITIVE,
  REDACTED,
  type Redactor,
  type RedactionRule,
  type RedactionContext,
} from './redact.ts'
export { httpGuard, guardedListener, type HttpGuard, type HttpGuardOptions } from './httpguard.ts'
// The one reflector core (a source's events into a table's rows): k8s and nats build on it.
export { ReflectorCore } from './reflector/core.ts'
export type { ReflectorCoreOptions, ReflectorHooks } from './reflector/options.ts'
export { type ReflectorCoreHealth, type ReflectorCoreState } from './reflector/health.ts'
export type { PendingEvent, ReflectorSource, RowWriter, SessionContext, SourceEvent } from './reflector/source.ts'
export { deleteRow } from './reflector/source.ts'
