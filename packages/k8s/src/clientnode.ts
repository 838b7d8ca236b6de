// @kubernetes/client-node, a peer dependency: users may pass their own KubeConfig, so they and we
// must share one copy, and exec credential plugins and auth providers (OIDC, Azure, GCP) are its.
// Every module of this package takes it from here, never from the package itself.
//
// Importing it loads its whole generated API (about 900 modules, +70 MB RSS, 0.7-1 s; docs/k8s.md),
// so it is loaded only when a kubeconfig's user needs it (./credentials.ts). Its presence is still
// checked when this package is imported (a resolve, nothing loaded): a missing peer is named with the
// command that installs it at once, not on the first request of a user with an exec plugin.
import { ConfigError } from './errors.ts'
import type * as ClientNode from '@kubernetes/client-node'

const PEER = '@kubernetes/client-node'
/** Keep in line with peerDependencies in package.json (scripts/check-packages.mjs checks it). */
const PEER_RANGE = '^1.4.0'

function missing(e: unknown): ConfigError | undefined {
  const err = e as NodeJS.ErrnoException
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(`'${PEER}'`)) return undefined
  return new ConfigError(
    `@statewright/k8s needs its peer dependency ${PEER}, which is not installed. ` + `Install it with: npm install ${PEER}@${PEER_RANGE}`,
    { cause: e },
  )
}

try {
  import.meta.resolve(PEER)
} catch (e) {
  throw missing(e) ?? e
}

let loading: Promise<typeof ClientNode> | undefined

/** client-node, imported on first use. */
export function loadClientNode(): Promise<typeof ClientNode> {
  loading ??= import('@kubernetes/client-node').catch((e) => {
    loading = undefined
    throw missing(e) ?? e
  })
  return loading
}

export type KubeConfig = ClientNode.KubeConfig
