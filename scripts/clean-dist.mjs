#!/usr/bin/env node
// Removes the package's dist/ and its build info (run from a package directory, by `prepack`), so
// that `tsc -b` builds dist/ afresh: tsc never deletes the outputs of a source file that is gone,
// and a stale dist/ would ship them.
import { rmSync } from 'node:fs'

rmSync('dist', { recursive: true, force: true })
rmSync('tsconfig.tsbuildinfo', { force: true })
