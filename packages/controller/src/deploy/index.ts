// @statewright/controller/deploy: what takes an operator to a cluster: its RBAC rules and manifests
// (Manager.manifests() and `statewright manifests` use these), its command-line flags, and a test
// that runs it as its ServiceAccount on the test server.
export { rbacRules, manifests, type PolicyRule, type ManifestOptions, type ManagerShape } from '../manager/manifests.ts'
export { parseManagerFlags, managerUsage, type ManagerFlags, type ParsedFlags } from '../manager/flags.ts'
export { startAsServiceAccount, type RbacTestServer } from '../manager/serviceaccount.ts'
