// @statewright/controller/inspect: the inspection endpoints as a handler, for a program that serves
// them on a server of its own (the Manager serves them on its HTTP port).
export { inspectHandler, UI_CSP, type InspectOptions, type ObjectReconcileStatus } from './handler.ts'
