// One name per concept, each from one package (issue 37): no name is exported by the faces of two
// packages, but the error root and its four shared classes, which every package re-exports by
// design (docs/architecture.md, Errors). Read from the checked API reports.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const SHARED = new Set(['StatewrightError', 'StatewrightErrorCode', 'ConfigError', 'UsageError', 'StoppedError', 'TimeoutError'])

test('no name is exported by two packages', () => {
  const owners = new Map<string, Set<string>>()
  for (const p of readdirSync(join(root, 'packages'))) {
    const report = join(root, 'packages', p, 'api-report.md')
    if (!existsSync(report)) continue
    for (const line of readFileSync(report, 'utf8').split('\n')) {
      const d = /^(?:class|function|interface|type|const|enum) (\w+)/.exec(line)
      if (d && !SHARED.has(d[1]!)) owners.set(d[1]!, (owners.get(d[1]!) ?? new Set()).add(p))
    }
  }
  const twice = [...owners].filter(([, ps]) => ps.size > 1).map(([n, ps]) => `${n}: ${[...ps].join(', ')}`)
  assert.equal(twice, [], `exported by more than one package:\n${twice.join('\n')}`)
})

test.run()
