// The admission pipeline every write goes through (create, update, patch, apply, /status), in the
// order kube-apiserver runs it: mutating steps (schema defaulting and pruning), then validating steps
// (the schema, then CEL x-kubernetes-validations), then storage.
// Invariants:
// - Steps run one after another in list order; a step may be async (a webhook), and the write is
//   committed only after every step has finished (objects.ts re-reads the stored object then and
//   starts over if it changed meanwhile, as the apiserver's GuaranteedUpdate does).
// - A mutating step replaces `req.object`; a validating step only reads it and throws a StatusError
//   (422 Invalid) to refuse. Warnings from any step reach the client as `Warning` headers.
import type { ResourceType } from './resources.ts'

export type Operation = 'CREATE' | 'UPDATE'

/** How unknown fields are answered (the `fieldValidation` query parameter). */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict'

export interface AdmissionRequest {
  type: ResourceType
  operation: Operation
  /** The object to be stored; mutating steps replace it. */
  object: any
  /** The stored object an UPDATE replaces (CEL transition rules compare with it). */
  oldObject?: any
  subresource?: string
  dryRun: boolean
  fieldValidation: FieldValidation
  /** Texts sent back as `Warning: 299 - "<text>"` headers. */
  warnings: string[]
}

export type AdmissionStep = (req: AdmissionRequest) => void | Promise<void>

export class WritePipeline {
  readonly mutating: AdmissionStep[] = []
  readonly validating: AdmissionStep[] = []

  /** Runs every step; synchronous (no promise) when no step returns one, so plain writes stay fast. */
  run(req: AdmissionRequest): void | Promise<void> {
    const steps = [...this.mutating, ...this.validating]
    for (let i = 0; i < steps.length; i++) {
      const r = steps[i]!(req)
      if (r && typeof (r as Promise<void>).then === 'function') return this.finish(r as Promise<void>, steps, i + 1, req)
    }
  }
  private async finish(pending: Promise<void>, steps: AdmissionStep[], from: number, req: AdmissionRequest): Promise<void> {
    await pending
    for (let i = from; i < steps.length; i++) await steps[i]!(req)
  }
}

/** A `Warning` header value (RFC 7234 warn-code 299, agent "-"), as kube-apiserver formats them. */
export function warningHeader(text: string): string {
  return `299 - ${JSON.stringify(text)}`
}
