#!/usr/bin/env node
// Summarizes V8 .cpuprofile files: total sampled time, the share of "(garbage collector)", and the
// functions with the most self time.   node scripts/cpuprofile-top.mjs <file.cpuprofile>... [--top N]
import { readFileSync } from 'node:fs'

const args = process.argv.slice(2)
const ti = args.indexOf('--top')
const top = ti >= 0 ? Number(args.splice(ti, 2)[1]) : 15
for (const file of args) {
  const p = JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const dt = new Map()
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0))
  const self = new Map()
  let total = 0
  for (const [id, us] of dt) {
    const n = byId.get(id)
    const f = n.callFrame
    const where = f.url ? `${f.url.replace(/^.*\/(packages|bench|scripts|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : ''
    const key = `${f.functionName || '(anonymous)'} ${where}`.trim()
    self.set(key, (self.get(key) ?? 0) + us)
    total += us
  }
  const idle = self.get('(idle)') ?? 0
  const busy = total - idle
  console.log(`${file}: ${(busy / 1000).toFixed(0)} ms busy; GC ${(((self.get('(garbage collector)') ?? 0) / busy) * 100).toFixed(1)}%`)
  const rows = [...self]
    .filter(([k]) => k !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
  for (const [k, us] of rows) console.log(`  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${k}`)
}
