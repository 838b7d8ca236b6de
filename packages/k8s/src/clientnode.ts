// @kubernetes/client-node, a peer dependency: users pass their own KubeConfig, so they and we must
// share one copy. Every module of this package takes it from here, never from the package itself.
//
// A static import of a missing package fails while Node links the module graph, before any of our
// code runs, with "Cannot find package ... imported from .../dist/cluster.js". Loading it with a
// (top-level awaited) dynamic import lets us replace that with an error that says what to install.
import { ConfigError } from './errors.ts'
import type * as ClientNode from '@kubernetes/client-node'

const PEER = '@kubernetes/client-node'
/** Keep in line with peerDependencies in package.json (scripts/check-packages.mjs checks it). */
const PEER_RANGE = '^1.4.0'

async function load(): Promise<typeof ClientNode> {
  try {
    return await import('@kubernetes/client-node')
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    if (err.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(`'${PEER}'`)) throw e
    throw new ConfigError(
      `@statewright/k8s needs its peer dependency ${PEER}, which is not installed. ` + `Install it with: npm install ${PEER}@${PEER_RANGE}`,
      { cause: e },
    )
  }
}

const clientNode = await load()

export const KubeConfig: typeof ClientNode.KubeConfig = clientNode.KubeConfig
export type KubeConfig = ClientNode.KubeConfig
