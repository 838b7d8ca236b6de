// @statewright/reconciler: drives a target towards the desired objects in one statedb table.
export {}
