// Minimal CRDs for the embedded test server: the Gateway API kinds and Kuadrant's RateLimitPolicy,
// with a status subresource and conditions as a map list keyed by type (a real cluster has the
// upstream CRDs installed instead).
const conditions = {
  type: 'array',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  items: {
    type: 'object',
    // a map list's key must be required (or defaulted): kube-apiserver refuses the CRD otherwise
    required: ['type'],
    properties: {
      type: { type: 'string' },
      status: { type: 'string' },
      reason: { type: 'string' },
      message: { type: 'string' },
      lastTransitionTime: { type: 'string' },
      observedGeneration: { type: 'integer' },
    },
  },
}
function crd(group: string, kind: string, plural: string, scope: 'Namespaced' | 'Cluster', version = 'v1') {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope,
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                status: { type: 'object', properties: { observedGeneration: { type: 'integer' }, conditions } },
              },
            },
          },
        },
      ],
    },
  }
}
export const RATE_LIMIT_CRDS = [
  crd('gateway.networking.k8s.io', 'GatewayClass', 'gatewayclasses', 'Cluster'),
  crd('gateway.networking.k8s.io', 'Gateway', 'gateways', 'Namespaced'),
  crd('gateway.networking.k8s.io', 'HTTPRoute', 'httproutes', 'Namespaced'),
  crd('kuadrant.io', 'RateLimitPolicy', 'ratelimitpolicies', 'Namespaced'),
]
