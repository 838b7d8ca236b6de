// Raw HTTP for the tests of the inspection servers: requests sent exactly as written (fetch
// normalizes paths and will not send a Host of our choosing), and clients that never read.
import { request, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'

export interface RawAnswer {
  status: number
  headers: IncomingMessage['headers']
  body: string
}

/** One request with the path and headers exactly as given (Host defaults to 127.0.0.1:port). */
export function rawRequest(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** A client that asks for `path` (a change stream) and never reads a byte of the answer. */
export function stalledClient(port: number, path: string, headers: Record<string, string> = {}): Socket {
  const s = connect(port, '127.0.0.1')
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')
  s.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n${extra}\r\n`)
  s.pause()
  s.on('error', () => undefined) // the server may drop it: that is the point
  return s
}
