// The demo (npm start) runs end to end against the embedded test server and reports nothing lost.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { startTestServer } from '@statewright/testserver'
import { runDemo } from '../examples/demo.ts'

test('npm start: the Kubernetes demo converges after every fault and prints a summary', async () => {
  delete process.env.KUBECONFIG
  const lines: string[] = []
  const { ok, summary } = await runDemo({ log: (l) => lines.push(l), sites: 20 })
  assert.ok(ok, lines.join('\n'))
  assert.ok(
    lines.some((l) => l.includes('nothing lost')),
    lines.join('\n'),
  )
  assert.ok((summary.reflector as any).relists >= 1, 'the 410 fault forced a relist')
  assert.ok((summary.driftRepairs as number) >= 2, 'drift repaired')
  assert.is((summary.target as any).pruned, 1)
  assert.ok((summary.seconds as number) < 30)
})

test('with KUBECONFIG the demo runs against that cluster (faults it cannot inject are skipped) and cleans up', async () => {
  const server = await startTestServer()
  const saved = process.env.KUBECONFIG
  process.env.KUBECONFIG = server.kubeconfigPath
  try {
    const lines: string[] = []
    const { ok, summary } = await runDemo({ log: (l) => lines.push(l), sites: 10 })
    assert.ok(ok, lines.join('\n'))
    assert.match(lines[0], /using the cluster of KUBECONFIG/)
    assert.ok((summary.driftRepairs as number) >= 2)
    // the demo deleted its namespace; the namespace controller empties and removes it a moment later
    assert.ok(
      server.control.get({ apiVersion: 'v1', kind: 'Namespace' }, 'statewright-demo')?.metadata.deletionTimestamp !== undefined ||
        server.control.get({ apiVersion: 'v1', kind: 'Namespace' }, 'statewright-demo') === undefined,
      'namespace deleted',
    )
    server.control.finishDeletions()
    assert.is(server.control.get({ apiVersion: 'v1', kind: 'Namespace' }, 'statewright-demo'), undefined, 'namespace removed')
  } finally {
    if (saved === undefined) delete process.env.KUBECONFIG
    else process.env.KUBECONFIG = saved
    await server.stop()
  }
})

test.run()
