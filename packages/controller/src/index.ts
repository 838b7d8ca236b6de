// @statewright/controller: the operator surface on statedb, the reconciler and the k8s package.
// The one public face of the package.
export { derive, derivationErrors, Derivation, type DeriveContext, type DeriveOptions, type DerivationError, type DerivationHealth } from './derive.ts'
export { createLogger, nullLogger, type Logger, type LoggerOptions, type LogLevel } from './logging.ts'
