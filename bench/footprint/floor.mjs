// The footprint bench's floor: what any Node process holding the objects costs. Plain node, one GET
// of the ConfigMaps of a namespace (FOOTPRINT_SERVER, FOOTPRINT_TOKEN), the parsed items held, and
// /readyz answering 200 once they are. No client library, no cache structure, no watch.
//   node bench/footprint/floor.mjs <port>
import http from 'node:http'

let ready = false
http
  .createServer((req, res) => {
    res.writeHead(req.url === '/readyz' && ready ? 200 : 503)
    res.end()
  })
  .listen(Number(process.argv[2]), '127.0.0.1')
const res = await fetch(`${process.env.FOOTPRINT_SERVER}/api/v1/namespaces/default/configmaps`, {
  headers: { Authorization: `Bearer ${process.env.FOOTPRINT_TOKEN}` },
})
globalThis.items = (await res.json()).items
ready = true
process.on('SIGTERM', () => process.exit(0))
