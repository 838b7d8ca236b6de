// The footprint bench's baseline: a bare @kubernetes/client-node informer on the ConfigMaps of a
// namespace, and /readyz answering 200 once it has listed. KUBECONFIG names the server.
//   node bench/footprint/informer.mjs <port>
import http from 'node:http'
import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node'

const kc = new KubeConfig()
kc.loadFromDefault()
const api = kc.makeApiClient(CoreV1Api)
const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => api.listNamespacedConfigMap({ namespace: 'default' }))
let ready = false
http
  .createServer((req, res) => {
    res.writeHead(req.url === '/readyz' && ready ? 200 : 503)
    res.end()
  })
  .listen(Number(process.argv[2]), '127.0.0.1')
await informer.start()
ready = true
process.on('SIGTERM', () => process.exit(0))
