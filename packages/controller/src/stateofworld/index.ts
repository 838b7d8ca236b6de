// @statewright/controller/stateofworld: the state-of-world controller (policy-machinery's
// controller/): watched kinds kept in a topology, reconcile functions, subscriptions and workflows
// run on the whole world, traced. A face of its own so the operator surface stays small.
export { StateOfWorldController, type StateOfWorldOptions } from './stateofworld.ts'
export { traceReconcile, type StateOfWorldContext, type StateOfWorldFn, type ResourceEvent } from './reconcile.ts'
export type { WatchSpec } from './watched.ts'
export { Subscription, Workflow, matches, type EventMatcher, type WorkflowOptions } from './workflow.ts'
