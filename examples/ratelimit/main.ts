// Kuadrant-style rate limiting as a state-of-world controller (seed 001): RateLimitPolicies attached
// to Gateways and HTTPRoutes become Limitador's limits and one config per Gateway; each policy gets
// Accepted and Enforced conditions. Writes only its ConfigMaps (label statewright.io/owner=
// kuadrant-ratelimit) and the policies' status.
//   KUBECONFIG=... node --conditions=@statewright/source --import tsx examples/ratelimit/main.ts
// LIMITADOR_NAMESPACE (default kuadrant-system); health, readiness and metrics on HTTP_PORT (8080).
import { Manager, type ManagerOptions } from '@statewright/controller'
import { StateOfWorldController, type ResourceEvent } from '@statewright/controller/stateofworld'
import { gatewayApiTopology } from '@statewright/topology'
import { RATE_LIMIT_POLICY, GATEWAY_API_GROUP } from './policy.ts'
import { rateLimitReconcile } from './reconcile.ts'

const GW = `${GATEWAY_API_GROUP}/v1`
/** Spec changes only: a status write (ours) is no event. */
const specChanged = (e: ResourceEvent) =>
  e.type !== 'update' ||
  e.old?.metadata.generation !== e.new?.metadata.generation ||
  JSON.stringify(e.old?.metadata.labels) !== JSON.stringify(e.new?.metadata.labels)

export function rateLimitController(opts: Partial<ManagerOptions> & { limitadorNamespace?: string } = {}): {
  manager: Manager
  controller: StateOfWorldController
} {
  const { limitadorNamespace = process.env.LIMITADOR_NAMESPACE ?? 'kuadrant-system', ...mopts } = opts
  const manager = new Manager({ name: 'kuadrant-ratelimit', ...mopts })
  manager.owns({ apiVersion: 'v1', kind: 'ConfigMap' })
  const controller = new StateOfWorldController({
    manager,
    name: 'ratelimit',
    watch: [
      { kind: { apiVersion: GW, kind: 'GatewayClass' } },
      { kind: { apiVersion: GW, kind: 'Gateway' }, predicate: specChanged },
      { kind: { apiVersion: GW, kind: 'HTTPRoute' }, predicate: specChanged },
      { kind: RATE_LIMIT_POLICY, predicate: specChanged },
    ],
    topology: gatewayApiTopology({ services: false, policies: [{ kind: 'RateLimitPolicy', group: 'kuadrant.io' }] }),
    reconcile: rateLimitReconcile({ limitadorNamespace }),
  })
  return { manager, controller }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { manager } = rateLimitController({
    http: { host: process.env.HTTP_HOST ?? '127.0.0.1', port: Number(process.env.HTTP_PORT ?? 8080) },
  })
  await manager.start()
}
