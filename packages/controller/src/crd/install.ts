// Installing a CustomResourceDefinition at start (development and tests): server-side apply as the
// manager's field manager, then wait until the server says Established, so the reflectors that
// follow find the kind in discovery.
// Invariant: bounded: a CRD not Established within 30 s is a ConfigError naming it and its conditions.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster, KubeObject } from '@statewright/k8s'
import { ConfigError } from '../errors.ts'
import { conditionsOf, isConditionTrue } from '../conditions.ts'
import type { Logger } from '@statewright/statedb'

export async function installCrd(cluster: Cluster, crd: KubeObject, fieldManager: string, log: Logger, timeoutMs = 30_000): Promise<void> {
  const name = String(crd.metadata.name)
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`
  await cluster.request({
    method: 'PATCH',
    path,
    query: { fieldManager, force: true },
    contentType: 'application/apply-patch+yaml',
    body: crd,
    what: `CustomResourceDefinition ${name}`,
  })
  const end = Date.now() + timeoutMs
  for (;;) {
    const cur: KubeObject = await cluster.request({ path, what: `CustomResourceDefinition ${name}` })
    if (isConditionTrue(conditionsOf(cur), 'Established')) break
    if (Date.now() > end)
      throw new ConfigError(`CustomResourceDefinition ${name}: not Established after ${timeoutMs} ms: ${JSON.stringify(conditionsOf(cur))}`)
    await sleep(200) // the API server establishes a CRD within a second or two; no watch for one object
  }
  log.info({ crd: name }, 'CustomResourceDefinition installed')
}
