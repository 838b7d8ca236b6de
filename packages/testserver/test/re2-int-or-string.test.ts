// Issue 41's first two refusals, end to end: a CRD with IntOrString and Quantity fields as generators
// write them (`x-kubernetes-int-or-string` + `anyOf: [integer, string]`, a pod template's resources)
// installs and validates, prunes and defaults them; CRD patterns are Go RE2 (prometheus-operator's
// AlertmanagerConfig month names use `(?i)`), matched as Go matches them, and what RE2 refuses
// refuses the CRD with Go's message. RE2 behaviour is checked against cases from Go's
// regexp/syntax parse_test.go (invalidRegexps) and regexp's find_test.go, named per row.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { env, http, type Env } from './helpers.ts'
import { re2Error, re2Test } from '../src/re2.ts'

let e: Env
test.before(async () => {
  e = await env()
})
test.after(async () => {
  await e.server.stop()
})

const IOS = { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true }
const QUANTITY = {
  ...IOS,
  pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
}
const MONTHS =
  '^((?i)january|february|march|april|may|june|july|august|september|october|november|december)(?:((:((?i)january|february|march|april|may|june|july|august|september|october|november|december))$)|$)'

function crd(name: string, spec: object): object {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${name}s.example.com` },
    spec: {
      group: 'example.com',
      names: { plural: `${name}s`, kind: name[0]!.toUpperCase() + name.slice(1) },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } }],
    },
  }
}
const post = (body: object) => http(e, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body)
const put = (plural: string, kind: string, name: string, spec: object) =>
  http(e, 'POST', `/apis/example.com/v1/namespaces/default/${plural}`, { apiVersion: 'example.com/v1', kind, metadata: { name }, spec })

test('a CRD with IntOrString and Quantity fields installs; the values validate, prune and default', async () => {
  const spec = {
    type: 'object',
    properties: {
      targetPort: { ...IOS, default: 8080 },
      resources: { type: 'object', properties: { limits: { type: 'object', additionalProperties: QUANTITY } } },
      maxUnavailable: {
        'x-kubernetes-int-or-string': true,
        allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { pattern: '^[0-9]+%?$' }],
      },
    },
  }
  const res = await post(crd('pool', spec))
  assert.is(res.status, 201, JSON.stringify(res.body))
  const ok = await put('pools', 'Pool', 'a', { resources: { limits: { cpu: '500m', memory: 1024 } }, maxUnavailable: '25%', junk: 1 })
  assert.is(ok.status, 201, JSON.stringify(ok.body))
  assert.equal(ok.body.spec, { targetPort: 8080, resources: { limits: { cpu: '500m', memory: 1024 } }, maxUnavailable: '25%' })
  const bad = await put('pools', 'Pool', 'b', { targetPort: true, resources: { limits: { cpu: 'lots' } }, maxUnavailable: 'x' })
  assert.is(bad.status, 422)
  const messages = bad.body.details.causes.map((c: any) => `${c.field}: ${c.message}`)
  assert.ok(
    messages.includes('spec.targetPort: Invalid value: "boolean": spec.targetPort in body must be of type integer,string: "boolean"'),
    messages.join('\n'),
  )
  assert.ok(
    messages.some((m: string) =>
      m.startsWith(`spec.resources.limits.cpu: Invalid value: "lots": spec.resources.limits.cpu in body should match '^(\\+|-)?`),
    ),
    messages.join('\n'),
  )
  assert.ok(
    messages.includes(`spec.maxUnavailable: Invalid value: "x": spec.maxUnavailable in body should match '^[0-9]+%?$'`),
    messages.join('\n'),
  )
  assert.is(messages.length, 3, messages.join('\n'))
})

test('RE2 patterns: (?i) mid-pattern (AlertmanagerConfig), \\A \\z, POSIX and Unicode classes match as in Go', async () => {
  const spec = {
    type: 'object',
    properties: {
      month: { type: 'string', pattern: MONTHS },
      word: { type: 'string', pattern: '\\A[[:alpha:]]+\\z' },
      greek: { type: 'string', pattern: '^\\p{Greek}+$' },
      letters: { type: 'string', pattern: '^\\pL+$' },
      scoped: { type: 'string', pattern: '^(?i:ab)c$' },
    },
  }
  const res = await post(crd('schedule', spec))
  assert.is(res.status, 201, JSON.stringify(res.body))
  const cases: Array<[string, string, boolean]> = [
    ['month', 'January', true],
    ['month', 'JANUARY:march', true],
    ['month', 'January:smarch', false],
    // in Go, (?i) in the group's first branch holds for the later branches too, up to the group's end
    ['month', 'FEBRUARY', true],
    ['month', 'Smarch', false],
    ['word', 'abc', true],
    ['word', 'ab1', false],
    ['word', 'abc\n', false], // \z is the very end, where JS's $ would be
    ['greek', 'αβγ', true],
    ['greek', 'abc', false],
    ['letters', 'héllo', true],
    ['scoped', 'ABc', true],
    ['scoped', 'ABC', false],
  ]
  let i = 0
  for (const [field, value, valid] of cases) {
    const r = await put('schedules', 'Schedule', `s${i++}`, { [field]: value })
    assert.is(r.status, valid ? 201 : 422, `${field}=${JSON.stringify(value)}: ${JSON.stringify(r.body.message)}`)
  }
})

test("a pattern RE2 refuses refuses the CRD with Go's message", async () => {
  const res = await post(crd('refused', { type: 'object', properties: { a: { type: 'string', pattern: '^(?!x)' } } }))
  assert.is(res.status, 422)
  assert.equal(res.body.details.causes, [
    {
      reason: 'FieldValueInvalid',
      message:
        'Invalid value: "^(?!x)": must be a valid regular expression, but isn\'t: error parsing regexp: invalid or unsupported Perl syntax: `(?!`',
      field: 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].pattern',
    },
  ])
})

// Go regexp/syntax parse_test.go invalidRegexps (a selection), with the messages Go's regexp.Compile gives
const REFUSED: Array<[string, string]> = [
  ['(a)\\1', 'invalid escape sequence: `\\1`'], // backreference
  ['(?=x)', 'invalid or unsupported Perl syntax: `(?=`'], // lookahead
  ['(?<=x)', 'invalid named capture: `(?<=x)`'], // lookbehind
  ['a++', 'invalid nested repetition operator: `++`'], // possessive
  ['a**', 'invalid nested repetition operator: `**`'],
  ['x{1001}', 'invalid repeat count: `{1001}`'],
  ['a{2,1}', 'invalid repeat count: `{2,1}`'],
  ['[z-a]', 'invalid character class range: `z-a`'],
  ['\\C', 'invalid escape sequence: `\\C`'],
  ['(', 'missing closing ): `(`'],
  [')', 'unexpected ): `)`'],
  ['[a', 'missing closing ]: `[a`'],
  ['*', 'missing argument to repetition operator: `*`'],
  ['\\8', 'invalid escape sequence: `\\8`'],
  ['(?P<x>a)(?P<x>b)', 'duplicate capture group name: `x`'],
  ['[[:foo:]]', 'invalid character class range: `[:foo:]`'],
]
test("RE2 refuses what Go refuses, with Go's message (parse_test.go invalidRegexps)", () => {
  for (const [p, msg] of REFUSED) assert.is(re2Error(p), `error parsing regexp: ${msg}`, p)
})

// Go regexp find_test.go / RE2 syntax rows: pattern, input, whether it matches
const MATCHES: Array<[string, string, boolean]> = [
  ['(?i)abc', 'xABCx', true],
  ['a(?i)b', 'aB', true],
  ['a(?i)b', 'AB', false],
  ['^((?i)a|b)c$', 'Bc', true], // a flag holds across | until its group closes
  ['^((?i)a|b)c$', 'BC', false],
  ['(?i:a)b', 'Ab', true],
  ['(?i:a)b', 'AB', false],
  ['(?s)a.b', 'a\nb', true],
  ['a.b', 'a\nb', false],
  ['(?m)^b$', 'a\nb\nc', true],
  ['^b$', 'a\nb\nc', false],
  ['(?U)a+', 'aaa', true],
  ['\\Qa.b\\E', 'a.b', true],
  ['\\Qa.b\\E', 'axb', false],
  ['^\\s$', '\u00a0', false], // Go's \s is ASCII: no-break space is not one (JS's \s says it is)
  ['^\\w+$', 'héllo', false], // \w is ASCII in Go, as in JS
  ['^[[:^digit:]]+$', 'abc', true],
  ['^\\PL+$', '123', true],
  ['^\\p{Han}$', '中', true],
  ['^(?P<year>\\d{4})$', '2024', true],
  ['^(?<year>\\d{4})$', '2024', true],
  ['\\x{41}', 'A', true],
  ['[\\d\\-]+', '12-3', true],
]
test('RE2 matches as Go matches (regexp find_test.go, re2 syntax)', () => {
  for (const [p, s, want] of MATCHES) assert.is(re2Test(p, s), want, `${p} on ${JSON.stringify(s)}`)
})

test.run()
