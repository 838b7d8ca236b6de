// Reading a request body: the 3 MiB limit (413 before decoding), JSON or YAML by Content-Type, and
// draining the body of a request that is answered without reading it (keep-alive stays usable).
import type { IncomingMessage } from 'node:http'
import { parse as parseYaml } from 'yaml'
import { StatusError, badRequest } from './status.ts'

export function drain(req: IncomingMessage): Promise<void> {
  if (req.readableEnded || req.complete) return Promise.resolve()
  return new Promise((resolve) => {
    req.on('end', resolve)
    req.on('error', () => resolve())
    req.resume()
  })
}

/** kube-apiserver's request body limit (3 MiB): a larger body is 413 before it is decoded. */
const MAX_BODY = 3 * 1024 * 1024

/** The request body as an object: JSON, or YAML when the Content-Type says so (application/yaml, apply-patch+yaml). */
export function readJson(req: IncomingMessage, optional = false): Promise<any> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size <= MAX_BODY) chunks.push(c)
    })
    req.on('error', reject)
    req.on('end', () => {
      if (size > MAX_BODY) return reject(new StatusError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_BODY}`))
      const text = Buffer.concat(chunks).toString('utf8')
      if (text.trim() === '') return optional ? resolve(undefined) : reject(badRequest('the request body is empty'))
      try {
        resolve(JSON.parse(text))
      } catch (e) {
        if (!/yaml/i.test(req.headers['content-type'] ?? ''))
          return reject(badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`))
        try {
          resolve(parseYaml(text))
        } catch (ye) {
          reject(badRequest(`error converting YAML to JSON: ${(ye as Error).message.split('\n')[0]}`))
        }
      }
    })
  })
}
