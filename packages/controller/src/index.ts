// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The one public face of the package.
export {}
