// The fixture of conversion.test.ts: a CRD in three versions whose spec differs (v1beta1 is the hub:
// spec.size; v1alpha1 spec.sizeText; v1beta2 spec.dims.size), a converting HTTPS webhook whose
// behaviour a test swaps (keys generated at run time), and request helpers.
import * as assert from 'uvu/assert'
import { createServer, type Server } from 'node:https'
import { env, http, type Env } from './helpers.ts'
import { generateTls } from '../src/index.ts'

export const G = 'stable.example.com'
export const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions`
export const path = (v: string, name = '', ns = 'default') => `/apis/${G}/${v}/namespaces/${ns}/multiversions${name ? `/${name}` : ''}`

// The hub is v1beta1 (spec.size); v1alpha1 spells it spec.sizeText (a string), v1beta2 spec.dims.size.
export const toHub = (o: any): number =>
  o.apiVersion.endsWith('v1alpha1') ? Number(o.spec?.sizeText) : o.apiVersion.endsWith('v1beta2') ? o.spec?.dims?.size : o.spec?.size
export function specAt(version: string, size: number, color?: string): any {
  const c = color === undefined ? {} : { color }
  if (version === 'v1alpha1') return { sizeText: String(size), ...c }
  if (version === 'v1beta2') return { dims: { size }, ...c }
  return { size, ...c }
}
/** The webhook's conversion: through the hub, color and status kept. */
export const convertObject = (o: any, to: string) => ({ ...o, apiVersion: to, spec: specAt(to.split('/')[1]!, toHub(o), o.spec?.color) })

export const schema = (spec: Record<string, unknown>, color?: string) => ({
  openAPIV3Schema: {
    type: 'object',
    properties: {
      spec: { type: 'object', properties: { ...spec, color: { type: 'string', ...(color ? { default: color } : {}) } } },
      status: { type: 'object', properties: { ready: { type: 'boolean' } } },
    },
  },
})
export function crd(conversion?: any, storage = 'v1beta1'): any {
  const v = (name: string, s: any, scale?: string) => ({
    name,
    served: true,
    storage: name === storage,
    schema: s,
    subresources: { status: {}, ...(scale ? { scale: { specReplicasPath: scale, statusReplicasPath: '.status.replicas' } } : {}) },
  })
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `multiversions.${G}` },
    spec: {
      group: G,
      scope: 'Namespaced',
      names: { plural: 'multiversions', kind: 'MultiVersion' },
      versions: [
        v('v1alpha1', schema({ sizeText: { type: 'string' } }, 'green')),
        v('v1beta1', schema({ size: { type: 'integer' } }), '.spec.size'),
        v('v1beta2', schema({ dims: { type: 'object', properties: { size: { type: 'integer' } } } }, 'blue'), '.spec.dims.size'),
      ],
      ...(conversion ? { conversion } : {}),
    },
  }
}

export type Behaviour = (review: any) => { status?: number; body: string } | 'hang'
export const converting: Behaviour = (review) => ({
  body: JSON.stringify(
    answer(
      review,
      review.request.objects.map((o: any) => convertObject(o, review.request.desiredAPIVersion)),
    ),
  ),
})
export const answer = (review: any, convertedObjects: any[], extra: any = {}) => ({
  apiVersion: review.apiVersion, // the review's own version (v1, or v1beta1 when the CRD lists it first)
  kind: 'ConversionReview',
  response: { uid: review.request.uid, convertedObjects, result: { status: 'Success' }, ...extra },
})

/** A converting HTTPS webhook whose behaviour a test swaps; it records every request. */
export interface Converter {
  url: string
  caBundle: string
  requests: any[]
  behave(b: Behaviour): void
  close(): Promise<void>
}
export async function startConverter(): Promise<Converter> {
  const tls = await generateTls(['127.0.0.1', `conv.default.svc`])
  const requests: any[] = []
  let behaviour = converting
  const server: Server = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      requests.push(review.request)
      const r = behaviour(review)
      if (r === 'hang') return
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json' })
      res.end(r.body)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as any).port
  return {
    url: `https://127.0.0.1:${port}/convert`,
    caBundle: Buffer.from(tls.caPem).toString('base64'),
    requests,
    behave: (b) => (behaviour = b),
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(() => r()))
    },
  }
}

export const webhook = (c: Converter, reviewVersions = ['v1']) => ({
  strategy: 'Webhook',
  webhook: { clientConfig: { url: c.url, caBundle: c.caBundle }, conversionReviewVersions: reviewVersions },
})
export async function withCrd(
  conv: Converter,
  conversion: any,
  body: (e: Env) => Promise<void>,
  opts: Parameters<typeof env>[0] = {},
): Promise<void> {
  const e = await env({ conversionTimeoutMs: 500, ...opts })
  try {
    const res = await http(e, 'POST', CRD_PATH, crd(conversion))
    assert.is(res.status, 201, JSON.stringify(res.body))
    await body(e)
  } finally {
    conv.behave(converting)
    await e.server.stop()
  }
}
export const mv = (version: string, name: string, size: number, color?: string) => ({
  apiVersion: `${G}/${version}`,
  kind: 'MultiVersion',
  metadata: { name },
  spec: specAt(version, size, color),
})
export const stored = (e: Env, name: string) => e.server.control.get({ apiVersion: `${G}/v1beta1`, kind: 'MultiVersion' }, name, 'default')
export async function setStorage(e: Env, version: string): Promise<any> {
  const cur = (await http(e, 'GET', `${CRD_PATH}/multiversions.${G}`)).body
  cur.spec.versions = cur.spec.versions.map((v: any) => ({ ...v, storage: v.name === version }))
  const res = await http(e, 'PUT', `${CRD_PATH}/multiversions.${G}`, cur)
  assert.is(res.status, 200, JSON.stringify(res.body))
  return (await http(e, 'GET', `${CRD_PATH}/multiversions.${G}`)).body
}
export const VERSIONS = ['v1alpha1', 'v1beta1', 'v1beta2']
