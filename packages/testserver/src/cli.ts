#!/usr/bin/env node
// CLI: `statewright-testserver --port 6443 --kubeconfig ./kubeconfig` runs a test API server until
// interrupted (SIGINT/SIGTERM), writing a kubeconfig kubectl can use. HTTPS by default, with a CA and
// certificate generated at startup (kubectl never sends a bearer token over plain HTTP);
// `--insecure-http` serves plain HTTP for clients that accept it (client-node).
import { parseArgs } from 'node:util'
import { startTestServer } from './index.ts'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    kubeconfig: { type: 'string' },
    token: { type: 'string' },
    'no-auth': { type: 'boolean', default: false },
    'no-gc': { type: 'boolean', default: false },
    'insecure-http': { type: 'boolean', default: false },
    tls: { type: 'boolean', default: false }, // the default since HTTPS became one; kept so old scripts run
    seed: { type: 'string' },
    'history-size': { type: 'string' },
    'bookmark-interval-ms': { type: 'string' },
    name: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})
if (values.help) {
  process.stdout.write(`usage: statewright-testserver [--port N] [--host H] [--kubeconfig FILE] [--token T | --no-auth] [--insecure-http]
                             [--seed N] [--history-size N] [--bookmark-interval-ms N] [--name CLUSTER] [--no-gc]`)
  process.exit(0)
}
const opts: Parameters<typeof startTestServer>[0] = { port: Number(values.port), host: values.host! }
if (values.kubeconfig) opts.kubeconfigPath = values.kubeconfig
if (values.token) opts.token = values.token
if (values['no-auth']) opts.token = null
if (values['no-gc']) opts.gc = false
if (values.seed) opts.seed = Number(values.seed)
if (values['history-size']) opts.historySize = Number(values['history-size'])
if (values['bookmark-interval-ms']) opts.bookmarkIntervalMs = Number(values['bookmark-interval-ms'])
if (values.name) opts.name = values.name
opts.tls = !values['insecure-http']
const server = await startTestServer(opts)
const path = server.kubeconfigPath
process.stdout.write(
  `statewright-testserver listening on ${server.url}\nkubeconfig: ${path}\ntoken: ${server.token ?? '(auth disabled)'}\n`,
)
const shutdown = () => {
  void server.stop().then(() => process.exit(0))
}
process.on('SIGINT', shutdown)
process.on('SIGTERM', shutdown)
