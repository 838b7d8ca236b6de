#!/usr/bin/env node
// Runs every package's uvu tests (and the top-level test/ folder), each folder in its own Node
// process, and prints one closing line: "N passed, N failed" (", N skipped" when some are).
// A folder whose process does not exit by itself after its tests finished counts as a failure:
// tests must leave no timer, socket or server behind. Test processes run from src/ (the
// "@statewright/source" export condition, docs/packaging.md); the packed-package check at the end
// runs the built dist/ from tarballs. `node scripts/test.mjs packaging` runs that check alone.
// Output: colour only on a terminal and never with NO_COLOR; after the runs, every failure again
// (folder, file, test name, the assertion's diff) and one summary line per package, then the closing
// line.
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
// STATEWRIGHT_TEST_FOLDERS (comma-separated) replaces the discovered folders (the runner's own test)
const given = process.env.STATEWRIGHT_TEST_FOLDERS?.split(',').filter(Boolean)
const selected = given ?? (only.length ? folders.filter((f) => only.some((o) => f.includes(o))) : folders)

// The TypeScript loader of the test processes: ours (scripts/ts: esbuild, cached by content; about
// 0.4 s less per process than tsx), or tsx with STATEWRIGHT_TS_LOADER=tsx. Processes the tests
// start themselves name their own (tsx).
const LOADER = process.env.STATEWRIGHT_TS_LOADER === 'tsx' ? 'tsx' : join(root, 'scripts/ts/register.mjs')
const FOLDER_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS ?? 8 * 60_000)
const EXIT_GRACE_MS = 15_000
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '')
const color = !!process.stdout.isTTY && process.env.NO_COLOR === undefined
const paint = (code, s) => (color ? `\x1b[${code}m${s}\x1b[0m` : s)
// uvu colours through kleur, which NO_COLOR turns off (FORCE_COLOR=0 alone does not)
const childEnv = color ? { ...process.env } : { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }

/** The FAIL blocks of a uvu run, with the file each belongs to. */
function failuresOf(dir, text) {
  const out = []
  let file = ''
  let cur
  for (const line of text.split('\n')) {
    if (/^\S+\.test\.ts$/.test(line.trim()) && !line.startsWith(' ')) {
      file = line.trim()
      cur = undefined
      continue
    }
    const m = line.match(/^\s+FAIL\s+"(.*)"\s*$/)
    if (m) {
      cur = { where: `${dir}/${file}`, test: m[1], lines: [] }
      out.push(cur)
      continue
    }
    if (/^\s+Total:/.test(line)) {
      cur = undefined
      continue
    }
    if (cur && cur.lines.length < 40 && !/^\s+at /.test(line)) cur.lines.push(line)
  }
  for (const f of out) while (f.lines.length && f.lines[f.lines.length - 1].trim() === '') f.lines.pop()
  return out
}

function runFolder(dir) {
  const started = Date.now()
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--conditions=@statewright/source',
        '--import',
        LOADER,
        '--import',
        join(root, 'scripts/exit-report.mjs'),
        join(root, 'node_modules/uvu/bin.js'),
        dir,
        '\\.test\\.ts$',
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv },
    )
    let out = ''
    let finishedAt = 0
    let note = ''
    const onData = (stream) => (buf) => {
      stream.write(color ? buf : strip(buf.toString()))
      out += buf.toString()
      if (!finishedAt && /Duration:/.test(strip(out))) {
        finishedAt = Date.now()
        setTimeout(() => {
          if (child.exitCode === null) {
            note = `${dir}: tests finished but the process did not exit within ${EXIT_GRACE_MS / 1000}s (something left running: see [exit check] above)`
            // scripts/exit-report.mjs prints what keeps it alive, then it is killed
            child.kill('SIGUSR2')
            setTimeout(() => child.kill('SIGKILL'), 2000).unref()
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
      const seconds = (Date.now() - started) / 1000
      if (Number.isNaN(total)) {
        resolve({
          dir,
          passed: 0,
          failed: 1,
          skipped: 0,
          seconds,
          failures: [],
          note: note || `${dir}: exited with code ${code} before reporting`,
        })
        return
      }
      let failed = total - passed - skipped
      if (note || (code !== 0 && failed === 0)) failed += 1
      resolve({
        dir,
        passed,
        failed,
        skipped,
        seconds,
        failures: failuresOf(dir, text),
        note: note || (code !== 0 ? `${dir}: exit code ${code}` : ''),
      })
    })
  })
}

function checkPackages() {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'scripts/check-packages.mjs')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (b) => {
      process.stdout.write(b)
      out += b
    })
    child.on('exit', (code) => {
      const m = out.match(/^packaging: (\d+) passed, (\d+) failed/m)
      if (!m) resolve({ passed: 0, failed: 1, note: `packaging: scripts/check-packages.mjs exited with code ${code} before reporting` })
      else
        resolve({
          passed: Number(m[1]),
          failed: Number(m[2]) + (code !== 0 && m[2] === '0' ? 1 : 0),
          note: code !== 0 ? 'packaging: see the FAIL lines above' : '',
        })
    })
  })
}

let passed = 0,
  failed = 0,
  skipped = 0
const notes = []
const results = []
for (const dir of selected) {
  console.log(`\n=== ${dir}`)
  const r = await runFolder(dir)
  results.push(r)
  passed += r.passed
  failed += r.failed
  skipped += r.skipped
  if (r.note) notes.push(r.note)
}
// The packed-package check (build, pack, install in a consumer outside the workspace): its
// "packaging: N passed, N failed" line adds to the closing one. Runs unless a filter excludes it.
if (!given && (!only.length || only.includes('packaging'))) {
  console.log('\n=== packaging (scripts/check-packages.mjs)')
  const started = Date.now()
  const r = await checkPackages()
  results.push({ dir: 'packaging', passed: r.passed, failed: r.failed, skipped: 0, seconds: (Date.now() - started) / 1000, failures: [] })
  passed += r.passed
  failed += r.failed
  if (r.note) notes.push(r.note)
}
const failures = results.flatMap((r) => r.failures)
if (failures.length) {
  console.log(`\n${paint('31;1', 'Failures')}`)
  for (const f of failures) console.log(`\n${paint('31', '✘')} ${f.where} › ${paint('1', f.test)}\n${f.lines.join('\n')}`)
}
console.log('\nSummary')
const width = Math.max(...results.map((r) => r.dir.length))
for (const r of results) {
  const line = `  ${r.dir.padEnd(width)}  ${String(r.passed).padStart(4)} passed, ${r.failed} failed${r.skipped ? `, ${r.skipped} skipped` : ''}  (${r.seconds.toFixed(1)} s)`
  console.log(r.failed ? paint('31', line) : line)
}
console.log('')
for (const n of notes) console.log(`FAIL ${n}`)
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed > 0 ? 1 : 0)
