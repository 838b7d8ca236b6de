// The footprint bench's floor: what any Node process holding the objects costs. Plain node, one GET
// of the ConfigMaps of a namespace (FOOTPRINT_SERVER, FOOTPRINT_TOKEN), the parsed items held, and
// /readyz answering 200 once they are. No client library, no cache structure, no watch. The GET goes
// through node:http, as the operator's requests do (@statewright/k8s): not the global fetch, whose
// undici alone is about 10 MiB of RSS and 25 ms more than this whole floor.
//   node bench/footprint/floor.mjs <port>
import http from 'node:http'

let ready = false
http
  .createServer((req, res) => {
    res.writeHead(req.url === '/readyz' && ready ? 200 : 503)
    res.end()
  })
  .listen(Number(process.argv[2]), '127.0.0.1')
const body = await new Promise((resolve, reject) => {
  const url = `${process.env.FOOTPRINT_SERVER}/api/v1/namespaces/default/configmaps`
  http
    .get(url, { headers: { Authorization: `Bearer ${process.env.FOOTPRINT_TOKEN}` } }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve(Buffer.concat(chunks).toString()))
      res.on('error', reject)
    })
    .on('error', reject)
})
globalThis.items = JSON.parse(body).items
ready = true
process.on('SIGTERM', () => process.exit(0))
