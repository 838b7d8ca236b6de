// The CRD conversion webhook (controller-runtime's /convert): a ConversionReview
// (apiextensions.k8s.io/v1) in, each object converted to request.desiredAPIVersion by its kind's
// KindConversion (../crd/versions.ts: spoke -> hub -> spoke), the ConversionReview out.
// Invariants:
// - Pure: review() takes the parsed body and returns the status code and the body to send; the
//   HTTP part (size limit, TLS) is the WebhookServer's.
// - A body that is not a ConversionReview with a request.uid is a 400 (there is no uid to answer
//   to); anything else wrong answers 200 with result.status Failure and a message naming the object
//   (index, kind, namespace/name) and the versions, and no convertedObjects: the API server then fails
//   the request that needed the conversion, naming the message. One object failing fails the review.
// - Nothing thrown by a conversion function escapes: it becomes the Failure's message.
import { groupOf, type KubeObject } from '@statewright/k8s'
import { ConfigError, ConversionError } from '../errors.ts'
import { KindConversion, objectName } from '../crd/versions.ts'

/** controller-runtime's path for the conversion webhook. */
export const CONVERT_PATH = '/convert'

export interface ConversionAnswer {
  code: number
  body: Record<string, unknown>
}

/** The conversions a webhook server serves at /convert, by group and kind. */
export class ConversionWebhook {
  private readonly kinds = new Map<string, KindConversion>()

  /** Serves `c`'s kind (once: a second conversion for one group and kind is a ConfigError). */
  add(c: KindConversion): void {
    const key = `${c.kind}.${c.group}`
    const had = this.kinds.get(key)
    if (had && had !== c) throw new ConfigError(`conversion webhook: ${key} is registered twice with different versions`)
    this.kinds.set(key, c)
  }

  get size(): number {
    return this.kinds.size
  }

  /** The conversion served for a group and kind. */
  get(group: string, kind: string): KindConversion | undefined {
    return this.kinds.get(`${kind}.${group}`)
  }

  /** The answer to a parsed request body (see the file's invariants). */
  review(body: unknown): ConversionAnswer {
    const review = body as { apiVersion?: unknown; kind?: unknown; request?: Record<string, unknown> } | null
    const req = review?.request
    if (typeof review !== 'object' || review === null || review.kind !== 'ConversionReview' || typeof req?.uid !== 'string')
      return { code: 400, body: { error: 'not a ConversionReview with a request.uid' } }
    if (review.apiVersion !== 'apiextensions.k8s.io/v1')
      return { code: 400, body: { error: `ConversionReview ${JSON.stringify(review.apiVersion)}: only apiextensions.k8s.io/v1 is served` } }
    const answer = (response: Record<string, unknown>): ConversionAnswer => ({
      code: 200,
      body: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response: { uid: req.uid, ...response } },
    })
    const failure = (message: string) => answer({ result: { status: 'Failure', message } })
    const desired = req.desiredAPIVersion
    if (typeof desired !== 'string' || desired === '') return failure('request.desiredAPIVersion must be an apiVersion such as "group/v1"')
    if (!Array.isArray(req.objects)) return failure('request.objects must be a list of objects')
    const converted: KubeObject[] = []
    for (const [i, obj] of (req.objects as unknown[]).entries()) {
      const at = `objects[${i}]`
      if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return failure(`${at} is not an object`)
      const o = obj as KubeObject
      if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string')
        return failure(`${at} (${objectName(o)}) has no apiVersion and kind to convert from`)
      if (typeof o.metadata !== 'object' || o.metadata === null || Array.isArray(o.metadata))
        return failure(`${at}: ${o.kind} from ${o.apiVersion} has no metadata`)
      const group = groupOf(o.apiVersion)
      const c = this.get(group, o.kind)
      if (!c)
        return failure(
          `${at}: ${o.kind} ${objectName(o)} from ${o.apiVersion} to ${desired}: this webhook converts no ${o.kind}.${group || 'core'} (it converts ${[...this.kinds.keys()].join(', ') || 'nothing'})`,
        )
      try {
        converted.push(c.convert(o, desired))
      } catch (err) {
        const message =
          err instanceof ConversionError ? err.message : `${o.kind} ${objectName(o)}: ${(err as Error)?.message ?? String(err)}`
        return failure(`${at}: ${message}`)
      }
    }
    return answer({ convertedObjects: converted, result: { status: 'Success' } })
  }
}

/** The conversion of a kind that converts through a webhook (strategy Webhook), else undefined. */
export function webhookConversionOf(kind: unknown): KindConversion | undefined {
  const c = (kind as { conversion?: unknown } | undefined)?.conversion
  return c instanceof KindConversion && c.strategy === 'Webhook' ? c : undefined
}
