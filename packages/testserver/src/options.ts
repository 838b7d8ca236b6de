// Validation of request options (the query parameters of a verb), as kube-apiserver's
// apimachinery/pkg/apis/meta/internalversion/validation does before a handler runs.
// Invariant: an option a real server refuses is refused here with the same 422 Invalid shape
// (kind `ListOptions`, `CreateOptions`, ... in group meta.k8s.io, one cause per field), never ignored.
import { badRequest, invalid, type StatusCause } from './status.ts'
import type { FieldValidation } from './admission.ts'

export type OptionsKind = 'ListOptions' | 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions'

function refuse(kind: OptionsKind, causes: StatusCause[]): void {
  if (causes.length) throw invalid(kind, 'meta.k8s.io', '', causes)
}
const forbidden = (field: string, why: string): StatusCause => ({ reason: 'FieldValueForbidden', message: `Forbidden: ${why}`, field })

/** `dryRun` may only be `All` (a real server answers `dryRun=true` with 422, it does not create). */
export function checkDryRun(kind: OptionsKind, dryRun: string | undefined): boolean {
  if (dryRun === undefined || dryRun === '') return false
  refuse(
    kind,
    dryRun === 'All'
      ? []
      : [
          {
            reason: 'FieldValueNotSupported',
            message: `Unsupported value: []string{"${dryRun}"}: supported values: "All"`,
            field: 'dryRun',
          },
        ],
  )
  return true
}

/** ValidateListOptions: the resourceVersionMatch combinations a list or a watch may use. */
export function checkListOptions(q: Record<string, string | undefined>, watch: boolean): void {
  const match = q.resourceVersionMatch ?? ''
  const causes: StatusCause[] = []
  if (watch) {
    if (q.sendInitialEvents !== undefined) {
      if (match !== 'NotOlderThan')
        causes.push(forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'))
      if (q.allowWatchBookmarks !== 'true' && q.allowWatchBookmarks !== '1')
        causes.push(forbidden('allowWatchBookmarks', 'sendInitialEvents requires setting allowWatchBookmarks to true'))
    } else if (match !== '') {
      causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'))
    }
    return refuse('ListOptions', causes)
  }
  if (match !== '') {
    if (!q.resourceVersion)
      causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'))
    if (q.continue) causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'))
    if (match !== 'Exact' && match !== 'NotOlderThan')
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan", ""`,
        field: 'resourceVersionMatch',
      })
    if (match === 'Exact' && q.resourceVersion === '0')
      causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
  }
  if (q.sendInitialEvents !== undefined) causes.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'))
  refuse('ListOptions', causes)
}

/** `fieldValidation`: Ignore, Warn (the default) or Strict; anything else is 400 as on a real server. */
export function checkFieldValidation(v: string | undefined): FieldValidation {
  if (v === undefined || v === '') return 'Warn'
  if (v === 'Ignore' || v === 'Warn' || v === 'Strict') return v
  throw badRequest(`fieldValidation must be one of "Ignore", "Warn", "Strict", got "${v}"`)
}
