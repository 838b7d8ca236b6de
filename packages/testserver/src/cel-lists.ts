// The Kubernetes CEL `lists` library (k8s.io/apiserver/pkg/cel/library/lists.go) on @bufbuild/cel:
// isSorted, sum, min, max, indexOf, lastIndexOf on lists of comparable values (ints, uints,
// doubles, strings, bools, bytes).
// Invariants:
// - Elements compare as CEL compares them: numbers by value across int, uint and double; other
//   values only with their own kind (a mixed list is a "no such overload" error, as in CEL).
// - min and max of an empty list are errors ("min called on empty list"); sum of an empty list is 0.
// - indexOf/lastIndexOf use CEL equality (numbers by value) and return -1 when absent.
// Durations (`['1m'].sum()` on duration lists) are not supported: a rule that needs them gets the
// "no matching overload" error, which cel.ts answers with an explicit 500 naming it.
import type { CelList, CelValue } from '@bufbuild/cel'
import { TestServerError } from './errors.ts'

type CelLib = typeof import('@bufbuild/cel')

const kindOf = (v: unknown): string => {
  if (typeof v === 'bigint' || typeof v === 'number') return 'number'
  if (typeof v === 'object' && v !== null && 'value' in v && typeof (v as any).value === 'bigint') return 'number' // CelUint
  if (v instanceof Uint8Array) return 'bytes'
  return typeof v
}
const num = (v: unknown): number | bigint => (typeof v === 'object' && v !== null ? (v as any).value : (v as number | bigint))

/** <0, 0, >0; undefined when the two are not comparable. */
function compare(a: unknown, b: unknown): number | undefined {
  const ka = kindOf(a)
  if (ka !== kindOf(b)) return undefined
  if (ka === 'number') {
    const x = num(a)
    const y = num(b)
    return x < y ? -1 : x > y ? 1 : 0
  }
  if (ka === 'string' || ka === 'boolean') return (a as any) < (b as any) ? -1 : (a as any) > (b as any) ? 1 : 0
  if (ka === 'bytes') return Buffer.compare(Buffer.from(a as Uint8Array), Buffer.from(b as Uint8Array))
  return undefined
}

export function listsLibrary({ celMethod, listType, CelScalar }: CelLib) {
  const LIST = listType(CelScalar.DYN)
  const items = (l: CelList): CelValue[] => [...l]
  // a thrown error is the call's CEL error (the rule fails with its message)
  const fail = (message: string): never => {
    throw new TestServerError(message, 'Internal')
  }
  const noOverload = (name: string) => fail(`no such overload: ${name}`)
  const extreme = (name: 'min' | 'max') =>
    celMethod(name, LIST, [], CelScalar.DYN, function (this: CelList) {
      const xs = items(this)
      if (xs.length === 0) fail(`${name} called on empty list`)
      let best: CelValue = xs[0]!
      for (const x of xs.slice(1)) {
        const c = compare(x, best)
        if (c === undefined) return noOverload(name)
        if (name === 'min' ? c < 0 : c > 0) best = x
      }
      return best as any
    })
  const index = (name: 'indexOf' | 'lastIndexOf') =>
    celMethod(name, LIST, [CelScalar.DYN], CelScalar.INT, function (this: CelList, x: CelValue) {
      const xs = items(this)
      const hit = (y: CelValue) => compare(x, y) === 0
      return BigInt(name === 'indexOf' ? xs.findIndex(hit) : xs.findLastIndex(hit))
    })
  return [
    celMethod('isSorted', LIST, [], CelScalar.BOOL, function (this: CelList) {
      const xs = items(this)
      for (let i = 1; i < xs.length; i++) {
        const c = compare(xs[i - 1], xs[i])
        if (c === undefined) return noOverload('isSorted')
        if (c > 0) return false
      }
      return true
    }),
    celMethod('sum', LIST, [], CelScalar.DYN, function (this: CelList) {
      const xs = items(this)
      if (xs.length === 0) return 0n as any
      if (xs.every((x) => typeof x === 'bigint')) return (xs as bigint[]).reduce((a, b) => a + b, 0n) as any
      if (xs.every((x) => typeof x === 'number')) return (xs as number[]).reduce((a, b) => a + b, 0) as any
      return noOverload('sum')
    }),
    extreme('min'),
    extreme('max'),
    index('indexOf'),
    index('lastIndexOf'),
  ]
}
