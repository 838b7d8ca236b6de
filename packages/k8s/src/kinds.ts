// Typed constants of the built-in kinds: `Manager.watch(ConfigMap)` yields a table of client-node's
// `V1ConfigMap` with no cast, and a request needs no discovery (each constant is a ResourceRef).
// Invariants:
// - Types only from client-node (`import type`): importing these constants never loads it at run time.
// - Each constant's resource and scope are what kube-apiserver's discovery says (a test compares them
//   with the test server's discovery documents, which come from kube-apiserver's).
// - Objects of a watched table always have metadata (the API server returns it), although client-node's
//   models declare it optional.
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1CronJob,
  V1CustomResourceDefinition,
  V1DaemonSet,
  V1Deployment,
  V1Endpoints,
  CoreV1Event,
  V1HorizontalPodAutoscaler,
  V1Ingress,
  V1Job,
  V1Lease,
  V1Namespace,
  V1NetworkPolicy,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node'
import type { ResourceRef } from './gvk.ts'

/** A built-in kind with its resource, scope and object type. */
export type Kind<T extends object> = Readonly<ResourceRef<T>>

const kind = <T extends object>(apiVersion: string, kind: string, resource: string, namespaced: boolean): Kind<T> =>
  Object.freeze({ apiVersion, kind, resource, namespaced })

export const Namespace = kind<V1Namespace>('v1', 'Namespace', 'namespaces', false)
export const Node = kind<V1Node>('v1', 'Node', 'nodes', false)
export const ConfigMap = kind<V1ConfigMap>('v1', 'ConfigMap', 'configmaps', true)
export const Secret = kind<V1Secret>('v1', 'Secret', 'secrets', true)
export const Service = kind<V1Service>('v1', 'Service', 'services', true)
export const ServiceAccount = kind<V1ServiceAccount>('v1', 'ServiceAccount', 'serviceaccounts', true)
export const Endpoints = kind<V1Endpoints>('v1', 'Endpoints', 'endpoints', true)
export const Pod = kind<V1Pod>('v1', 'Pod', 'pods', true)
export const PersistentVolume = kind<V1PersistentVolume>('v1', 'PersistentVolume', 'persistentvolumes', false)
export const PersistentVolumeClaim = kind<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true)
export const CoreEvent = kind<CoreV1Event>('v1', 'Event', 'events', true)
export const Deployment = kind<V1Deployment>('apps/v1', 'Deployment', 'deployments', true)
export const StatefulSet = kind<V1StatefulSet>('apps/v1', 'StatefulSet', 'statefulsets', true)
export const DaemonSet = kind<V1DaemonSet>('apps/v1', 'DaemonSet', 'daemonsets', true)
export const ReplicaSet = kind<V1ReplicaSet>('apps/v1', 'ReplicaSet', 'replicasets', true)
export const Job = kind<V1Job>('batch/v1', 'Job', 'jobs', true)
export const CronJob = kind<V1CronJob>('batch/v1', 'CronJob', 'cronjobs', true)
export const Ingress = kind<V1Ingress>('networking.k8s.io/v1', 'Ingress', 'ingresses', true)
export const NetworkPolicy = kind<V1NetworkPolicy>('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true)
export const Role = kind<V1Role>('rbac.authorization.k8s.io/v1', 'Role', 'roles', true)
export const RoleBinding = kind<V1RoleBinding>('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings', true)
export const ClusterRole = kind<V1ClusterRole>('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false)
export const ClusterRoleBinding = kind<V1ClusterRoleBinding>(
  'rbac.authorization.k8s.io/v1',
  'ClusterRoleBinding',
  'clusterrolebindings',
  false,
)
export const Lease = kind<V1Lease>('coordination.k8s.io/v1', 'Lease', 'leases', true)
export const PodDisruptionBudget = kind<V1PodDisruptionBudget>('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true)
export const HorizontalPodAutoscaler = kind<V2HorizontalPodAutoscaler>(
  'autoscaling/v2',
  'HorizontalPodAutoscaler',
  'horizontalpodautoscalers',
  true,
)
export const HorizontalPodAutoscalerV1 = kind<V1HorizontalPodAutoscaler>(
  'autoscaling/v1',
  'HorizontalPodAutoscaler',
  'horizontalpodautoscalers',
  true,
)
export const CustomResourceDefinition = kind<V1CustomResourceDefinition>(
  'apiextensions.k8s.io/v1',
  'CustomResourceDefinition',
  'customresourcedefinitions',
  false,
)

/** Every constant above, for iteration (discovery checks, RBAC generation). */
export const BUILTIN_KINDS: ReadonlyArray<Kind<object>> = [
  Namespace,
  Node,
  ConfigMap,
  Secret,
  Service,
  ServiceAccount,
  Endpoints,
  Pod,
  PersistentVolume,
  PersistentVolumeClaim,
  CoreEvent,
  Deployment,
  StatefulSet,
  DaemonSet,
  ReplicaSet,
  Job,
  CronJob,
  Ingress,
  NetworkPolicy,
  Role,
  RoleBinding,
  ClusterRole,
  ClusterRoleBinding,
  Lease,
  PodDisruptionBudget,
  HorizontalPodAutoscaler,
  HorizontalPodAutoscalerV1,
  CustomResourceDefinition,
]
