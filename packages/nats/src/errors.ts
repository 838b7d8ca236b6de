// One error hierarchy: what @statewright/nats throws is a NatsError with a `code`, naming the bucket,
// the key and the revision it concerns.
//   NatsError          code
//   ├─ ConfigError     'Config'    a missing option, nats-server not installed
//   ├─ BucketError     'Bucket'    the bucket is missing or its watch ended early (retried with backoff)
//   ├─ DecodeError     'Decode'    a value that does not decode (the row is skipped; the reflector goes on)
//   ├─ WriteError      'Write'     a put, create, delete or status write failed (after CAS rereads)
//   ├─ PruneError      'Prune'     some keys could not be pruned (all were tried)
//   └─ ServerError     'Server'    the test harness's nats-server did not start
export type NatsErrorCode = 'Config' | 'Bucket' | 'Decode' | 'Write' | 'Prune' | 'Server' | 'Usage'

export class NatsError extends Error {
  override name = 'NatsError'
  constructor(
    message: string,
    readonly code: NatsErrorCode = 'Usage',
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}
export class ConfigError extends NatsError {
  override name = 'ConfigError'
  constructor(message: string) {
    super(message, 'Config')
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
export class PruneError extends NatsError {
  override name = 'PruneError'
  constructor(message: string) {
    super(message, 'Prune')
  }
}
export class ServerError extends NatsError {
  override name = 'ServerError'
  constructor(message: string) {
    super(message, 'Server')
  }
}
