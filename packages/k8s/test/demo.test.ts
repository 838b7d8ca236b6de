// The demo (npm start) runs end to end against the embedded test server and reports nothing lost.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { runDemo } from '../../../examples/demo.ts'

test('npm start: the Kubernetes demo converges after every fault and prints a summary', async () => {
  delete process.env.KUBECONFIG
  const lines: string[] = []
  const { ok, summary } = await runDemo({ log: (l) => lines.push(l), sites: 20 })
  assert.ok(ok, lines.join('\n'))
  assert.ok(lines.some((l) => l.includes('nothing lost')), lines.join('\n'))
  assert.ok((summary.reflector as any).relists >= 1, 'the 410 fault forced a relist')
  assert.ok((summary.driftRepairs as number) >= 2, 'drift repaired')
  assert.is((summary.target as any).pruned, 1)
  assert.ok((summary.seconds as number) < 30)
})

test.run()
