// JSON Merge Patch (RFC 7396) merge strategies for reducePolicies, as policy-machinery's json_patch
// example merges ColorPolicies: the whole spec merged deeply, not rule by rule. The patch algorithm is
// the json-merge-patch package's (a well-used implementation of RFC 7396); these never change their
// inputs.
// - defaults: the more specific result is applied as a patch over this policy's spec: the more
//   specific wins field by field, at every depth, and this policy fills in what it lacks;
// - overrides: this policy's spec is applied as a patch over the result: it wins at every depth.
// A `null` in the patching side removes the field (RFC 7396).
import { apply } from 'json-merge-patch'
import type { MergeFunction } from './define.ts'

/** RFC 7396: `target` with `patch` applied (neither is changed). */
export function mergePatch<T = unknown>(target: unknown, patch: unknown): T {
  return apply(structuredClone(target ?? {}), patch) as T
}

/** Merges a policy's spec as defaults: the more specific result wins at every depth. */
export const jsonMergeDefaults: MergeFunction<any> = (source, target) => mergePatch(source, target ?? {})

/** Merges a policy's spec as overrides: it wins over the more specific result at every depth. */
export const jsonMergeOverrides: MergeFunction<any> = (source, target) => mergePatch(target ?? {}, source)
