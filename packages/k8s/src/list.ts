// A complete list of one kind: pages of `pageSize` with continue tokens, pipelined (the token is read
// from the head of a page, where list metadata comes before the items, and the next page is requested
// while this one is parsed). An expired continue token (410) starts the list again from the first
// page. Items get kind and apiVersion (a real server leaves them out of list items).
import { isGone } from './api-error.ts'
import type { Cluster } from './cluster.ts'
import { collectionPath, type KubeObject, type ResourceRef } from './gvk.ts'

export interface ListOptions {
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
  /** Objects per page (default 500). */
  pageSize?: number
  signal?: AbortSignal
}

export async function listAll(
  cluster: Cluster,
  r: ResourceRef,
  o: ListOptions = {},
): Promise<{ items: KubeObject[]; resourceVersion: string | undefined }> {
  const items: KubeObject[] = []
  let rv: string | undefined
  const limit = o.pageSize ?? 500
  const fetch = (cont: string | undefined) => {
    const p = cluster.requestText({
      path: collectionPath(r, o.namespace),
      query: { limit, continue: cont, labelSelector: o.labelSelector, fieldSelector: o.fieldSelector },
      signal: o.signal,
      what: `list ${r.kind}`,
      timeoutMs: Math.max(cluster.requestTimeoutMs, 60_000),
    })
    p.catch(() => {}) // handled when awaited (a page may be dropped unawaited on the fallback path)
    return p
  }
  let pending: Promise<string> | undefined = fetch(undefined)
  let cont: string | undefined
  while (pending) {
    let text: string
    try {
      text = await pending
    } catch (err) {
      if (cont !== undefined && isGone(err)) {
        items.length = 0
        rv = undefined
        cont = undefined
        pending = fetch(undefined)
        continue
      }
      throw err
    }
    const early = peekContinue(text)
    pending = early ? fetch(early) : undefined
    const page = JSON.parse(text)
    cont = page?.metadata?.continue || undefined
    if (cont !== early) pending = cont ? fetch(cont) : undefined // the peek was wrong: sequential pages
    if (rv === undefined) rv = page?.metadata?.resourceVersion
    const { kind, apiVersion } = r
    for (const it of page?.items ?? []) {
      // A new object (not two added properties) keeps the object's shape compact.
      items.push(it.kind === undefined || it.apiVersion === undefined ? { apiVersion, kind, ...it } : it)
    }
  }
  return { items, resourceVersion: rv }
}

/** The list's continue token, read from the text before its items (undefined when there is none). */
export function peekContinue(text: string): string | undefined {
  let end = text.indexOf('"items"')
  if (end < 0) end = Math.min(text.length, 4096)
  const m = /"metadata"\s*:\s*\{[^{}]*?"continue"\s*:\s*"([^"\\]*)"/.exec(text.slice(0, end))
  return m ? m[1] || undefined : undefined
}
