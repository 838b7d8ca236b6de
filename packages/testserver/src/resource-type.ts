// What a served resource type is (ResourceType) and what registers one (ResourceTypeInput): the
// shapes the kind registry (resources.ts) and the built-in kinds' list (builtin-kinds.ts) share.

export interface ResourceType {
  group: string
  version: string
  /** Plural, lowercase: the URL segment. */
  resource: string
  singular: string
  kind: string
  listKind: string
  namespaced: boolean
  shortNames: string[]
  categories: string[]
  /** Has a `/status` subresource: the main resource ignores .status, /status only writes .status. */
  status: boolean
  /** Built-in kinds accept strategic-merge patches; custom kinds get 415 like on a real server. */
  builtin: boolean
  /** Bumps metadata.generation when anything outside metadata/status changes. */
  generation: boolean
  /** Extra fields a fieldSelector may use beyond metadata.name / metadata.namespace. */
  selectableFields: string[]
  /**
   * A PUT without metadata.resourceVersion overwrites (most built-in kinds). False where the real
   * strategy forbids it (Lease, every custom kind): such a PUT is 422 Invalid.
   */
  unconditionalUpdate: boolean
  /** Serves `/scale` (autoscaling/v1 Scale over spec.replicas), as Deployments and StatefulSets do. */
  scale: boolean
  /** Where /scale reads and writes (a CRD's subresources.scale paths; `.spec.replicas` by default). */
  scalePaths: ScalePaths
  /** A CRD version's additionalPrinterColumns (server-side Table output). */
  printerColumns?: CustomResourceColumnDefinition[]
  /** Storage identity shared by all versions of a kind. */
  storageKey: string
  /** Set for kinds registered through a CustomResourceDefinition: its name. */
  crd?: string
  /** A custom kind's openAPIV3Schema: server-side apply follows its list and map types. */
  schema?: Record<string, any>
  /** Set when this version is deprecated: the `Warning` every response about it carries. */
  deprecationWarning?: string
}

export interface CustomResourceColumnDefinition {
  name: string
  type: string
  jsonPath: string
  format?: string
  description?: string
  priority?: number
}

export interface ScalePaths {
  specReplicas: string
  statusReplicas: string
  selector?: string
}

export interface ResourceTypeInput {
  group?: string
  version: string
  resource: string
  kind: string
  singular?: string
  listKind?: string
  namespaced?: boolean
  shortNames?: string[]
  categories?: string[]
  status?: boolean
  builtin?: boolean
  generation?: boolean
  selectableFields?: string[]
  unconditionalUpdate?: boolean
  scale?: boolean
  scalePaths?: ScalePaths
  printerColumns?: CustomResourceColumnDefinition[]
  crd?: string
  /** openAPIV3Schema (custom kinds): x-kubernetes-list-type/-list-map-keys/-map-type drive apply. */
  schema?: Record<string, any>
  /** Marks the version deprecated: every response about it carries this `Warning`. */
  deprecationWarning?: string
}
