#!/usr/bin/env node
// `npm create statewright@latest <dir> [--name NAME]`: a new operator project in <dir>.
import { parseArgs } from 'node:util'
import { ScaffoldError, scaffold } from './index.ts'

const USAGE = 'Usage: npm create statewright@latest <dir> [-- --name NAME]\n'
try {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { name: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    process.exit(0)
  }
  const dir = positionals[0]
  if (!dir) throw new ScaffoldError(`create-statewright: which directory?\n${USAGE}`)
  const files = scaffold(dir, values.name ? { name: values.name } : {})
  process.stdout.write(
    `wrote ${files.length} files to ${dir}\n\nnext:\n  cd ${dir}\n  npm install\n  npm test            # the operator on the embedded test server\n  npm run manifests   # CRD, RBAC, webhook and Deployment for kubectl apply\n`,
  )
} catch (err) {
  const message = String((err as Error)?.message ?? err).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?')
  process.stderr.write(`${message}\n`)
  process.exit(err instanceof ScaffoldError || (err as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1)
}
