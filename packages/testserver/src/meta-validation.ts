// ObjectMeta validation for every kind (built-in and custom), as apimachinery's ValidateObjectMeta:
// label keys and values, annotation keys and their total size (256 KiB), finalizer names.
// Invariant: the causes carry the real field paths and message texts (clients and tests match on them).
import type { StatusCause } from './status.ts'

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
export const TOTAL_ANNOTATION_SIZE = 256 * 1024

const QN_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

/** A qualified name (`prefix/name`): the reasons it is not one (empty when it is). */
export function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/')
  let name = key
  const errs: string[] = []
  if (parts.length === 2) {
    const [prefix, n] = parts as [string, string]
    name = n
    if (prefix.length === 0) errs.push('prefix part must be non-empty')
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))
      errs.push(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      )
  } else if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]
  }
  if (name.length === 0) errs.push('name part must be non-empty')
  else if (name.length > 63) errs.push('name part must be no more than 63 characters')
  else if (!QUALIFIED_NAME.test(name)) errs.push(QN_MSG)
  return errs
}

export function metaCauses(meta: any): StatusCause[] {
  const out: StatusCause[] = []
  const labels = meta?.labels
  if (labels !== undefined && labels !== null) {
    for (const [k, v] of Object.entries(labels)) {
      for (const why of qualifiedNameErrors(k))
        out.push({ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(k)}: ${why}`, field: 'metadata.labels' })
      if (typeof v !== 'string')
        out.push({ reason: 'FieldValueInvalid', message: 'Invalid value: label values must be strings', field: 'metadata.labels' })
      else if (v.length > 63)
        out.push({
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${JSON.stringify(v)}: must be no more than 63 characters`,
          field: 'metadata.labels',
        })
      else if (!LABEL_VALUE.test(v))
        out.push({
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${JSON.stringify(v)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
          field: 'metadata.labels',
        })
    }
  }
  const ann = meta?.annotations
  if (ann !== undefined && ann !== null) {
    let size = 0
    for (const [k, v] of Object.entries(ann)) {
      for (const why of qualifiedNameErrors(k.toLowerCase()))
        out.push({ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(k)}: ${why}`, field: 'metadata.annotations' })
      size += Buffer.byteLength(k) + Buffer.byteLength(typeof v === 'string' ? v : String(v))
    }
    if (size > TOTAL_ANNOTATION_SIZE)
      out.push({
        reason: 'FieldValueTooLong',
        message: `Too long: must have at most ${TOTAL_ANNOTATION_SIZE} bytes`,
        field: 'metadata.annotations',
      })
  }
  const fin = meta?.finalizers
  if (Array.isArray(fin))
    fin.forEach((f: unknown, i: number) => {
      const errs = typeof f === 'string' ? qualifiedNameErrors(f) : ['must be a string']
      for (const why of errs)
        out.push({
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${JSON.stringify(f)}: ${why}`,
          field: `metadata.finalizers[${i}]`,
        })
    })
  return out
}
