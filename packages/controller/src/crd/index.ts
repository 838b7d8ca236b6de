// @statewright/controller/crd: custom kinds from a schema (TypeBox), their CRDs and their versions
// (hub and spokes, conversion).
export {
  customKind,
  type CustomKind,
  type CustomKindOptions,
  type CustomObject,
  type PrinterColumn,
  type SchemaLike,
  type StaticOf,
} from './customkind.ts'
export {
  KindConversion,
  type Converted,
  type VersionCommon,
  type VersionEntry,
  type VersionOptions,
  type SameSchemaVersionOptions,
} from './versions.ts'
