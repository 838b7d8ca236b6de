#!/usr/bin/env node
// The public API report: every name a package's src/index.ts exports, with its kind and its
// signature (functions), members (classes, interfaces) or type (types, constants), one line each,
// sorted. Checked in as packages/<pkg>/api-report.md, so a change to a package's public face is a
// visible diff in review; CI (npm run typecheck) fails when a report is stale.
//
//   node scripts/api-report.mjs           rewrite the reports
//   node scripts/api-report.mjs --check   exit 1 when a report differs from the source, naming the lines
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

const root = new URL('..', import.meta.url).pathname
const check = process.argv.includes('--check')
const pkgs = readdirSync(join(root, 'packages'))
  .filter((p) => existsSync(join(root, 'packages', p, 'src', 'index.ts')))
  .sort()
const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile).config ?? {}
const { options } = ts.convertCompilerOptionsFromJson({ ...base.compilerOptions, noEmit: true }, root)
const entries = pkgs.map((p) => join(root, 'packages', p, 'src', 'index.ts'))
const program = ts.createProgram(entries, { ...options, customConditions: ['@statewright/source'] })
const checker = program.getTypeChecker()
const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope
/**
 * One line; a union of string literals sorted: the checker prints union members in type-creation
 * order, which moves with unrelated changes anywhere in the program.
 */
const oneLine = (s) =>
  s
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/"[^"]*"(?: \| "[^"]*")+/g, (m) => m.split(' | ').sort().join(' | '))
/** A member's name; a well-known symbol by its name, not by the checker's numbered id (which moves with unrelated changes). */
const memberName = (p) => p.getName().replace(/^__@(\w+)@\d+$/, '[Symbol.$1]')
/** Members marked @internal are not part of the contract (they are public only for the package's own files). */
const internal = (decl) =>
  ts.getJSDocTags(decl).some((t) => t.tagName.text === 'internal') ||
  /@internal/.test(decl.getFullText().slice(0, decl.getLeadingTriviaWidth()))

function describe(sym) {
  const s = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym
  const decl = s.declarations?.[0]
  const name = sym.getName()
  if (!decl) return [`${name}`]
  if (s.flags & ts.SymbolFlags.Class) {
    const lines = [`class ${name}`]
    const type = checker.getTypeOfSymbolAtLocation(s, decl)
    for (const sig of type.getConstructSignatures())
      if (!sig.declaration || !internal(sig.declaration)) lines.push(`  new${oneLine(checker.signatureToString(sig, decl, flags))}`)
    const inst = checker.getDeclaredTypeOfSymbol(s)
    for (const p of checker.getPropertiesOfType(inst)) {
      const pd = p.declarations?.[0]
      if (
        !pd ||
        ts.getCombinedModifierFlags(pd) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected) ||
        p.getName().startsWith('#') ||
        internal(pd)
      )
        continue
      if (pd.getSourceFile().fileName.includes('node_modules')) continue
      lines.push(`  ${memberName(p)}: ${oneLine(checker.typeToString(checker.getTypeOfSymbolAtLocation(p, decl), decl, flags))}`)
    }
    for (const p of checker.getPropertiesOfType(type)) {
      if (p.getName() === 'prototype') continue
      const pd = p.declarations?.[0]
      if (!pd || ts.getCombinedModifierFlags(pd) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue
      if (pd.getSourceFile().fileName.includes('node_modules')) continue
      lines.push(`  static ${memberName(p)}: ${oneLine(checker.typeToString(checker.getTypeOfSymbolAtLocation(p, decl), decl, flags))}`)
    }
    return lines
  }
  if (s.flags & ts.SymbolFlags.Function) {
    const type = checker.getTypeOfSymbolAtLocation(s, decl)
    return type.getCallSignatures().map((sig) => `function ${name}${oneLine(checker.signatureToString(sig, decl, flags))}`)
  }
  if (s.flags & ts.SymbolFlags.Interface) {
    const lines = [`interface ${name}`]
    const t = checker.getDeclaredTypeOfSymbol(s)
    for (const p of checker.getPropertiesOfType(t))
      if (!p.declarations?.[0] || !internal(p.declarations[0]))
        lines.push(
          `  ${memberName(p)}${p.flags & ts.SymbolFlags.Optional ? '?' : ''}: ${oneLine(checker.typeToString(checker.getTypeOfSymbolAtLocation(p, decl), decl, flags))}`,
        )
    return lines
  }
  if (s.flags & ts.SymbolFlags.TypeAlias)
    return [
      `type ${name} = ${oneLine(checker.typeToString(checker.getDeclaredTypeOfSymbol(s), decl, flags | ts.TypeFormatFlags.InTypeAlias))}`,
    ]
  if (s.flags & ts.SymbolFlags.Variable)
    return [`const ${name}: ${oneLine(checker.typeToString(checker.getTypeOfSymbolAtLocation(s, decl), decl, flags))}`]
  return [`${name}`]
}

let stale = 0
for (const [i, pkg] of pkgs.entries()) {
  const sf = program.getSourceFile(entries[i])
  const mod = checker.getSymbolAtLocation(sf)
  const exports = mod ? checker.getExportsOfModule(mod).sort((a, b) => a.getName().localeCompare(b.getName())) : []
  const body = exports.flatMap(describe)
  const name = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')).name
  const text = `# API report: ${name}\n\nGenerated by \`node scripts/api-report.mjs\` from src/index.ts: every exported name. A change here is a change of the public surface.\n\n\`\`\`ts\n${body.join('\n')}\n\`\`\`\n`
  const file = join(root, 'packages', pkg, 'api-report.md')
  const old = existsSync(file) ? readFileSync(file, 'utf8') : ''
  if (old === text) continue
  if (!check) {
    writeFileSync(file, text)
    console.log(`wrote packages/${pkg}/api-report.md (${exports.length} exports)`)
    continue
  }
  stale++
  const was = new Set(old.split('\n'))
  const now = new Set(text.split('\n'))
  console.error(`packages/${pkg}/api-report.md is stale (the public surface changed); run node scripts/api-report.mjs and review the diff:`)
  for (const l of text.split('\n')) if (!was.has(l)) console.error(`  + ${l}`)
  for (const l of old.split('\n')) if (!now.has(l)) console.error(`  - ${l}`)
}
if (check) {
  if (stale) process.exit(1)
  console.log(`api reports: ${pkgs.length} packages match their source`)
}
