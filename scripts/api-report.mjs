#!/usr/bin/env node
// The public API report: every name each face of a package (its package.json exports) exports, with its kind and its
// signature (functions), members (classes, interfaces) or type (types, constants), one line each,
// sorted. Checked in as packages/<pkg>/api-report.md, so a change to a package's public face is a
// visible diff in review; CI (npm run typecheck) fails when a report is stale, and when a public
// signature names a type that no face exports (a user could not write the type down).
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
/** A package's faces: each entry of its package.json exports with a source file ('.', './crd', ...). */
const facesOf = (pkg) => {
  const exp = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')).exports ?? {}
  return Object.entries(exp)
    .filter(([, v]) => typeof v === 'object' && v['@statewright/source'])
    .map(([k, v]) => ({ face: k, file: join(root, 'packages', pkg, v['@statewright/source']) }))
}
const faces = pkgs.map((pkg) => ({ pkg, faces: facesOf(pkg) }))
const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile).config ?? {}
const { options } = ts.convertCompilerOptionsFromJson({ ...base.compilerOptions, noEmit: true }, root)
const entries = faces.flatMap((f) => f.faces.map((x) => x.file))
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

const exportsOf = (file) => {
  const mod = checker.getSymbolAtLocation(program.getSourceFile(file))
  return mod ? checker.getExportsOfModule(mod).sort((a, b) => a.getName().localeCompare(b.getName())) : []
}
const resolved = (sym) => (sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym)
/** Every symbol some face of some package exports: what a user can import. */
const importable = new Set(faces.flatMap((f) => f.faces.flatMap((x) => exportsOf(x.file).map(resolved))))
const ownSource = (d) => /\/packages\/[^/]+\/src\//.test(d.getSourceFile().fileName) && !d.getSourceFile().fileName.includes('node_modules')

/**
 * The named types a public declaration's signature mentions that a user cannot import: declared in
 * a package's source and exported by no face. Private and protected members and @internal ones are
 * not the contract; a type parameter is not a named type.
 */
function leaks(sym) {
  const s = resolved(sym)
  const found = new Map()
  const note = (t, where) => {
    if (!t || t.flags & ts.SymbolFlags.TypeParameter) return
    const r = resolved(t)
    // anonymous types (__object, __function) have no name to import
    if (r.flags & ts.SymbolFlags.TypeParameter || importable.has(r) || r.getName().startsWith('__')) return
    const d = r.declarations?.[0]
    if (!d || !ownSource(d)) return
    // a local name for a dependency's type (client-node's KubeConfig): the user imports it from there
    const aliased = r.flags & ts.SymbolFlags.TypeAlias ? checker.getDeclaredTypeOfSymbol(r).getSymbol()?.declarations?.[0] : undefined
    if (aliased && !ownSource(aliased)) return
    found.set(r.getName(), `${where} mentions ${r.getName()} (${d.getSourceFile().fileName.replace(root, '')})`)
  }
  // a declaration's signature only: its parameters, type parameters and written type, never a body
  // or an initializer (what a function uses inside is not its contract)
  const signature = (node, where) => {
    if (ts.isBlock(node)) return
    if (node.parameters || node.typeParameters || node.type || ts.isPropertySignature(node) || ts.isPropertyDeclaration(node)) {
      for (const c of [...(node.typeParameters ?? []), ...(node.parameters ?? [])]) visit(c, where)
      if (node.type) visit(node.type, where)
      if (ts.isTypeAliasDeclaration(node)) return
      return
    }
    visit(node, where)
  }
  const visit = (node, where) => {
    if (ts.isBlock(node)) return
    if (ts.isParameter(node)) {
      if (node.type) visit(node.type, where)
      return
    }
    if (ts.isTypeReferenceNode(node)) note(checker.getSymbolAtLocation(node.typeName), where)
    else if (ts.isExpressionWithTypeArguments(node)) note(checker.getSymbolAtLocation(node.expression), where)
    ts.forEachChild(node, (c) => visit(c, where))
  }
  const hidden = (m) =>
    ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected) ||
    (m.name && ts.isPrivateIdentifier(m.name)) ||
    internal(m)
  for (const d of s.declarations ?? []) {
    if (!ownSource(d)) continue
    const name = sym.getName()
    if (ts.isClassDeclaration(d) || ts.isInterfaceDeclaration(d)) {
      for (const h of d.heritageClauses ?? []) visit(h, name)
      for (const m of d.members) {
        if (hidden(m) || ts.isClassStaticBlockDeclaration(m)) continue
        const where = `${name}.${m.name?.getText() ?? 'constructor'}`
        if (ts.isConstructorDeclaration(m)) {
          for (const p of m.parameters) if (!hidden(p)) visit(p, where)
        } else signature(m, where)
        // an inferred member type (no annotation) is as public as a written one
        if ((ts.isPropertyDeclaration(m) || ts.isGetAccessor(m)) && !m.type) {
          const t = checker.getTypeAtLocation(m)
          note(t.aliasSymbol ?? t.getSymbol(), where)
        }
      }
    } else if (ts.isVariableDeclaration(d) && !d.type) {
      const t = checker.getTypeAtLocation(d)
      note(t.aliasSymbol ?? t.getSymbol(), name)
    } else signature(d, name)
  }
  return [...found.values()]
}

let stale = 0
const leaked = []
for (const { pkg, faces: list } of faces) {
  const sections = []
  let count = 0
  for (const { face, file } of list) {
    const exports = exportsOf(file)
    count += exports.length
    for (const e of exports) for (const l of leaks(e)) leaked.push(`@statewright/${pkg}${face === '.' ? '' : face.slice(1)}: ${l}`)
    const body = exports.flatMap(describe)
    const title = face === '.' ? 'src/index.ts' : `${face} (${file.replace(join(root, 'packages', pkg) + '/', '')})`
    sections.push(`## ${title}: ${exports.length} names\n\n\`\`\`ts\n${body.join('\n')}\n\`\`\`\n`)
  }
  const name = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')).name
  const text = `# API report: ${name}\n\nGenerated by \`node scripts/api-report.mjs\` from each face of package.json's exports: every exported name. A change here is a change of the public surface.\n\n${sections.join('\n')}`
  const file = join(root, 'packages', pkg, 'api-report.md')
  const old = existsSync(file) ? readFileSync(file, 'utf8') : ''
  if (old === text) continue
  if (!check) {
    writeFileSync(file, text)
    console.log(`wrote packages/${pkg}/api-report.md (${count} exports)`)
    continue
  }
  stale++
  const was = new Set(old.split('\n'))
  const now = new Set(text.split('\n'))
  console.error(`packages/${pkg}/api-report.md is stale (the public surface changed); run node scripts/api-report.mjs and review the diff:`)
  for (const l of text.split('\n')) if (!was.has(l)) console.error(`  + ${l}`)
  for (const l of old.split('\n')) if (!now.has(l)) console.error(`  - ${l}`)
}
if (leaked.length) {
  console.error(`${leaked.length} public signatures use types no face exports (export them, or keep them out of the signature):`)
  for (const l of leaked) console.error(`  ${l}`)
}
if (check || leaked.length) {
  if (stale || leaked.length) process.exit(1)
  console.log(`api reports: ${pkgs.length} packages match their source; every type in a public signature is importable`)
}
