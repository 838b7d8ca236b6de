// @statewright/cli: the `statewright` command (inspection of a running process: tables, show, watch,
// status, health, topology; gen-types for CRDs), the graph renderer (DOT, SVG, laid out with dagre)
// and the web view's assets, which the controller's inspection handler serves when this package is
// installed. The one public face of the package.
export { runInspect, INSPECT_COMMANDS, INSPECT_USAGE, type CliIO, type CliOutput } from './inspect.ts'
export { genTypes, type GenTypesOptions } from './gentypes.ts'
export { layoutGraph, toDot, toSvg, STATUS_COLORS, type Layout, type LaidOutNode, type LaidOutEdge } from './graph.ts'
export { uiFile } from './ui.ts'
export { visible, forTerminal } from './terminal.ts'
export {
  StatewrightError,
  ConfigError,
  UsageError,
  StoppedError,
  TimeoutError,
  CliError,
  InspectError,
  InvalidInputError,
  type CliErrorCode,
} from './errors.ts'
