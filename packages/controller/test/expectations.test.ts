// Expectations (kube-controller-manager's ReplicaSet controller does not act again until its cache
// has observed its own creates): a run that comes while the last run's child applies are not answered
// yet waits for them, so fn reads what it wrote. The case: a Secret with a generated password, read
// back through a join (the model restart test's "password replaced" came from this window: a status
// write or a spec change re-ran fn after the Secret's create was sent and before its answer was in the
// table). The Secret's apply is held on the server for seconds; the Gadget changes meanwhile.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { randomBytes } from 'node:crypto'
import type { KubeObject } from '@statewright/k8s'
import { Manager, createLogger, waitForConvergence, type ManagedDeriveOptions } from '@statewright/controller'
import { GADGET, createGadget, env } from './helpers.ts'
import { gadget } from './helpers.ts'

const SECRET = { apiVersion: 'v1', kind: 'Secret' }
const quiet = createLogger({ level: 'silent' })

for (const style of ['reconcile', 'derive'] as const) {
  test(`${style}: a run while the last run's Secret create is in flight waits for its answer, and does not generate a second password`, async () => {
    const e = await env()
    const m = new Manager({ name: 'pw-operator', cluster: e.cluster, logger: quiet, handleSignals: false, http: false })
    const generated: string[] = []
    let runs = 0
    try {
      const secrets = m.watch(SECRET)
      const gadgets = m.watch<KubeObject>(GADGET)
      const secretOf = (g: KubeObject, get: (q: unknown) => KubeObject | undefined): KubeObject => {
        runs++
        const name = g.metadata.name!
        const have = get(secrets.primary.query(`default/${name}-pw`))
        let password = have ? String((have.data as any).password) : undefined
        if (password === undefined) generated.push((password = Buffer.from(randomBytes(8).toString('hex')).toString('base64')))
        return { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-pw`, namespace: 'default' }, data: { password } }
      }
      if (style === 'reconcile')
        m.reconcile({
          for: gadgets,
          owns: [SECRET],
          joins: [secrets],
          fn: (g, ctx) => ({ children: secretOf(g, (q) => ctx.get(secrets, q as never)) }),
        })
      else {
        const o: ManagedDeriveOptions<KubeObject> = {
          from: gadgets,
          owns: [SECRET],
          joins: [secrets],
          fn: (g, ctx) => secretOf(g, (q) => ctx.get(secrets, q as never)),
        }
        m.derive(o)
      }
      await m.start()
      const slow = e.server.control.delay({ method: 'PATCH', path: /\/secrets\/a-pw$/, ms: 3000, count: 1 })
      await createGadget(e.cluster, gadget('a', { size: 1 }))
      while (runs === 0) await new Promise((r) => setTimeout(r, 5))
      // the create of a-pw is on its way (held 3 s by the server); the Gadget changes now
      await e.cluster.request({
        method: 'PATCH',
        path: '/apis/example.com/v1/namespaces/default/gadgets/a',
        body: { spec: { size: 2 } },
        contentType: 'application/merge-patch+json',
      })
      await waitForConvergence(m, { timeoutMs: 20_000 })
      slow()
      assert.ok(runs >= 2, `fn ran again for the change (${runs} runs)`)
      assert.is(generated.length, 1, `one password generated, not ${generated.length}`)
      assert.is(String(e.server.control.get(SECRET, 'a-pw', 'default')?.data?.password), generated[0])
    } finally {
      await m.stop()
      await e.stop()
    }
  })
}

test.run()
