// Run by scripts/check-packages.mjs in a consumer that installed the tarballs without their peers
// (npm --legacy-peer-deps): no @kubernetes/client-node, no prom-client.
import assert from 'node:assert/strict'
import { DB } from '@statewright/statedb'
import { InMemoryMetrics, PrometheusMetrics, Reconciler } from '@statewright/reconciler'

assert.equal(typeof DB, 'function')
assert.equal(typeof Reconciler, 'function')
new InMemoryMetrics().operation('r', 'update', 'success', 0, 1)
assert.throws(
  () => new PrometheusMetrics(),
  (e) => {
    assert.match(e.message, /PrometheusMetrics needs prom-client.*npm install prom-client@\^15/)
    return true
  },
)
console.log('  missing peers: reconciler imports without prom-client; PrometheusMetrics says: npm install prom-client')

const range = process.argv[2] // the client-node peer range from the packed package.json
const err = await import('@statewright/k8s').then(
  () => undefined,
  (e) => e,
)
assert.ok(err, '@statewright/k8s must not import without @kubernetes/client-node')
assert.equal(
  err.message,
  `@statewright/k8s needs its peer dependency @kubernetes/client-node, which is not installed. Install it with: npm install @kubernetes/client-node@${range}`,
)
console.log(`  missing peers: importing @statewright/k8s throws: ${err.message}`)
