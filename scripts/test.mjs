#!/usr/bin/env node
// Runs every package's uvu tests (and the top-level test/ folder), each folder in its own Node
// process, and prints one closing line: "N passed, N failed" (", N skipped" when some are).
// A folder whose process does not exit by itself after its tests finished counts as a failure:
// tests must leave no timer, socket or server behind. Test processes run from src/ (the
// "@statewright/source" export condition, docs/packaging.md); the packed-package check at the end
// runs the built dist/ from tarballs. `node scripts/test.mjs packaging` runs that check alone.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const only = process.argv.slice(2) // optional folder filters, e.g. "statedb"
const folders = []
for (const pkg of readdirSync(join(root, 'packages')).sort()) {
  const dir = join('packages', pkg, 'test')
  if (existsSync(join(root, dir))) folders.push(dir)
}
if (existsSync(join(root, 'test'))) folders.push('test')
const selected = only.length ? folders.filter((f) => only.some((o) => f.includes(o))) : folders

const FOLDER_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS ?? 8 * 60_000)
const EXIT_GRACE_MS = 15_000
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '')

function runFolder(dir) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@statewright/source', '--import', 'tsx', join(root, 'node_modules/uvu/bin.js'), dir, '\\.test\\.ts$'],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } },
    )
    let out = ''
    let finishedAt = 0
    let note = ''
    const onData = (stream) => (buf) => {
      stream.write(buf)
      out += buf.toString()
      if (!finishedAt && /Duration:/.test(strip(out))) {
        finishedAt = Date.now()
        setTimeout(() => {
          if (child.exitCode === null) {
            note = `${dir}: tests finished but the process did not exit within ${EXIT_GRACE_MS / 1000}s (something left running)`
            child.kill('SIGKILL')
          }
        }, EXIT_GRACE_MS).unref()
      }
    }
    child.stdout.on('data', onData(process.stdout))
    child.stderr.on('data', onData(process.stderr))
    const timer = setTimeout(() => {
      note = `${dir}: timed out after ${FOLDER_TIMEOUT_MS / 1000}s`
      child.kill('SIGKILL')
    }, FOLDER_TIMEOUT_MS)
    child.on('exit', (code) => {
      clearTimeout(timer)
      const text = strip(out)
      const num = (label) => Number((text.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? NaN)
      const total = num('Total')
      const passed = num('Passed')
      const skipped = num('Skipped') || 0
      if (Number.isNaN(total)) {
        resolve({ dir, passed: 0, failed: 1, skipped: 0, note: note || `${dir}: exited with code ${code} before reporting` })
        return
      }
      let failed = total - passed - skipped
      if (note || (code !== 0 && failed === 0)) failed += 1
      resolve({ dir, passed, failed, skipped, note: note || (code !== 0 ? `${dir}: exit code ${code}` : '') })
    })
  })
}

function checkPackages() {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'scripts/check-packages.mjs')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (b) => { process.stdout.write(b); out += b })
    child.on('exit', (code) => {
      const m = out.match(/^packaging: (\d+) passed, (\d+) failed/m)
      if (!m) resolve({ passed: 0, failed: 1, note: `packaging: scripts/check-packages.mjs exited with code ${code} before reporting` })
      else resolve({ passed: Number(m[1]), failed: Number(m[2]) + (code !== 0 && m[2] === '0' ? 1 : 0), note: code !== 0 ? 'packaging: see the FAIL lines above' : '' })
    })
  })
}

let passed = 0, failed = 0, skipped = 0
const notes = []
for (const dir of selected) {
  console.log(`\n=== ${dir}`)
  const r = await runFolder(dir)
  passed += r.passed; failed += r.failed; skipped += r.skipped
  if (r.note) notes.push(r.note)
}
// The packed-package check (build, pack, install in a consumer outside the workspace): its
// "packaging: N passed, N failed" line adds to the closing one. Runs unless a filter excludes it.
if (!only.length || only.includes('packaging')) {
  console.log('\n=== packaging (scripts/check-packages.mjs)')
  const r = await checkPackages()
  passed += r.passed; failed += r.failed
  if (r.note) notes.push(r.note)
}
console.log('')
for (const n of notes) console.log(`FAIL ${n}`)
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed > 0 ? 1 : 0)
