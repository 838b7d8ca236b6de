// What @statewright/testserver throws of its own: a TestServerError (a StatewrightError); the shared
// ConfigError is re-exported here. The whole tree is in docs/architecture.md.
//   TestServerError    this file
//   ├─ (itself)        'UnknownKind'   a control call names a kind the server does not serve
//   ├─ (itself)        'Internal'      a broken invariant of the store (a bug)
//   ├─ (itself)        'WebhookCall'   an admission or conversion webhook could not be called or answered garbage
//   │                                  (webhook-client.ts; the request then fails with 500 or the call is ignored)
//   └─ StatusError     400, 404, 409, 410, 422, 429, 5xx   what a handler answers: `status` is the
//                                      Kubernetes Status sent, `code` its HTTP status (src/status.ts)
// StatusError is what the HTTP handlers throw and the server turns into a response; a client sees
// the Status, not the class. It reaches a caller only through the server's internals (server.objects).
import { StatewrightError } from '@statewright/statedb'

export { StatewrightError, ConfigError, StoppedError, TimeoutError, UsageError, type StatewrightErrorCode } from '@statewright/statedb'

export type TestServerErrorCode = 'UnknownKind' | 'Internal' | 'WebhookCall'

/** The test server's own failures; `code` is a number (the HTTP status) for a StatusError. */
export class TestServerError extends StatewrightError {
  override name = 'TestServerError'
  declare readonly code: TestServerErrorCode | number
  constructor(message: string, code: TestServerErrorCode | number, options?: ErrorOptions) {
    super(message, code, options)
  }
}
