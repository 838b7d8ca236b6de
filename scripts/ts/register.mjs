// `node --conditions=@statewright/source --import ./scripts/ts/register.mjs <file.ts>`: runs the
// TypeScript sources through ./hooks.mjs (esbuild, cached by content); stack traces map to the .ts
// lines through the inline source maps.
import { register } from 'node:module'

process.setSourceMapsEnabled(true)
register('./hooks.mjs', import.meta.url)
