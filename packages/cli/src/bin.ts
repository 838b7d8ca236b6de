#!/usr/bin/env node
// The `statewright` command.
//   statewright gen-types <crd.yaml> [--version v1] [--kube-object-from <module>]   types for custom kinds
//   statewright manifests <module> …   an operator's CRDs, RBAC and Deployment (manifests.ts)
//   statewright tables|show|watch|status|health|topology …   inspection of a running process (inspect.ts)
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { INSPECT_COMMANDS, INSPECT_USAGE, runInspect } from './inspect.ts'
import { MANIFESTS_USAGE, runManifests } from './manifests.ts'

const USAGE = `usage: statewright <command>
  gen-types <crd.yaml|-> [--version V] [--kube-object-from MODULE]   TypeScript types for the CRDs' kinds (to stdout)
${MANIFESTS_USAGE}
${INSPECT_USAGE}`

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv
  if (cmd === 'gen-types') {
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { version: { type: 'string' }, 'kube-object-from': { type: 'string' } },
    })
    const file = positionals[0]
    if (!file) {
      process.stderr.write(`${USAGE}\n`)
      return 2
    }
    const text = readFileSync(file === '-' ? 0 : file, 'utf8')
    // loaded here only: json-schema-to-typescript is large, and the inspection commands never need it
    const { genTypes } = await import('./gentypes.ts')
    process.stdout.write(
      await genTypes(text, {
        ...(values.version ? { version: values.version } : {}),
        ...(values['kube-object-from'] ? { kubeObjectFrom: values['kube-object-from'] } : {}),
      }),
    )
    return 0
  }
  if (cmd === 'manifests') {
    process.stdout.write(await runManifests(rest))
    return 0
  }
  if (cmd !== undefined && INSPECT_COMMANDS.has(cmd)) {
    const ctl = new AbortController()
    process.once('SIGINT', () => ctl.abort())
    return runInspect(cmd, rest, { stdout: process.stdout, stderr: process.stderr, env: process.env, signal: ctl.signal })
  }
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  process.stderr.write(`${USAGE}\n`)
  return cmd === undefined || cmd === '--help' || cmd === '-h' ? 0 : 2
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err) => {
    process.stderr.write(`statewright: ${(err as Error).message}\n`)
    process.exitCode = 1
  },
)
