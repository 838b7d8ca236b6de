// What @statewright/nats throws of its own: a NatsError (a StatewrightError) for the failures of NATS
// itself, naming the bucket, the key and the revision it concerns; the shared classes are
// re-exported here, and a target's failed prune is the reconciler's PruneError. The whole tree is in
// docs/architecture.md.
//   NatsError       this file
//   ├─ BucketError  'Bucket'    the bucket is missing or its watch ended early (retried with backoff)
//   ├─ DecodeError  'Decode'    a value that does not decode (the row is skipped; the reflector goes on)
//   ├─ WriteError   'Write'     a put, create, delete or status write failed (after CAS rereads)
//   └─ ServerError  'Server'    the test harness's nats-server did not start
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'

export type NatsErrorCode = 'Bucket' | 'Decode' | 'Write' | 'Server'

/** The failures of NATS itself: buckets, values, writes, the test harness's server. */
export class NatsError extends StatewrightError {
  override name = 'NatsError'
  declare readonly code: NatsErrorCode
  constructor(message: string, code: NatsErrorCode, options?: ErrorOptions) {
    super(message, code, options)
  }
}
export class BucketError extends NatsError {
  override name = 'BucketError'
  constructor(message: string) {
    super(message, 'Bucket')
  }
}
export class DecodeError extends NatsError {
  override name = 'DecodeError'
  constructor(message: string) {
    super(message, 'Decode')
  }
}
export class WriteError extends NatsError {
  override name = 'WriteError'
  constructor(message: string) {
    super(message, 'Write')
  }
}
export class ServerError extends NatsError {
  override name = 'ServerError'
  constructor(message: string) {
    super(message, 'Server')
  }
}
