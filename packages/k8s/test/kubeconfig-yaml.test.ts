// readSimpleYaml against the `yaml` package: every answer it gives is yaml's parse of the same text
// (kubeconfigs as kubectl, kind and the test server write them, random documents of kubeconfig-like
// values as yaml writes them, and random lines of YAML fragments), and the texts outside its subset
// answer undefined (kubeconfig.ts then parses them with yaml).
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import fc from 'fast-check'
import { parse, stringify } from 'yaml'
import { startTestServer } from '@statewright/testserver'
import { readSimpleYaml } from '../src/kubeconfig-yaml.ts'

const same = (text: string) => {
  const simple = readSimpleYaml(text)
  assert.ok(simple !== undefined, `read in the subset: ${text}`)
  assert.equal(simple, parse(text, { merge: true }), text)
}

test('a kubeconfig as kubectl and kind write it', () => {
  same(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
  name: kind-kind
- cluster:
    insecure-skip-tls-verify: true
    server: http://localhost:8080
    proxy-url: socks5://proxy.example:1080
  name: "plain"
contexts:
- context:
    cluster: kind-kind
    namespace: default
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
- name: 'it''s me'
  user:
    token: abc.def-ghi
    as-groups: []
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args:
        - eks
        - get-token
      env:
      interactiveMode: IfAvailable
`)
  same('# a comment\r\napiVersion: v1\r\n\r\nkind: Config\r\n  # indented comment\r\nclusters: []\r\n')
})

test("the test server's kubeconfig (written by yaml)", async () => {
  const s = await startTestServer()
  try {
    same(s.kubeconfig)
  } finally {
    await s.stop()
  }
})

test('texts outside the subset answer undefined', () => {
  for (const text of [
    '',
    '# only a comment\n',
    'a: 1\n',
    'a: -1\n',
    'a: .inf\n',
    'a: b # comment\n',
    'a: &x b\nc: *x\n',
    'a: !!str b\n',
    'a: |\n  text\n',
    'a: >\n  text\n',
    'a: {b: c}\n',
    'a: [b]\n',
    'a: "b\\n"\n',
    'a: "b\n  c"\n',
    'a: b\n  c\n',
    'a: b\na: c\n',
    '<<: {}\n',
    '__proto__: x\n',
    'true: x\n',
    '---\na: b\n',
    '%YAML 1.2\n---\na: b\n',
    'a:\tb\n',
    'a : b\n',
    '- - a\n',
    'just a scalar\n',
    'a: b: c\n',
    'a:\n  b: c\n d: e\n',
  ])
    assert.is(readSimpleYaml(text), undefined, JSON.stringify(text))
})

// Kubeconfig-like values: keys and strings from characters that matter to YAML.
const str = fc.string({ unit: fc.constantFrom(...'ab-_./: #\'"\\&*!|>%@`{}[],?~+01.9ZnNtT'.split('')), maxLength: 8 })
const keyArb = fc.oneof(fc.constantFrom('name', 'server', 'user', 'token', 'a-b', 'x.y/z', 'true', 'null', '1', ''), str)
const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    str,
    fc.boolean(),
    fc.constant(null),
    fc.integer(),
    fc.dictionary(keyArb, tie('v'), { maxKeys: 4 }),
    fc.array(tie('v'), { maxLength: 3 }),
  ),
})).v

test('property: documents yaml writes read as yaml reads them, or not at all', () => {
  fc.assert(
    fc.property(fc.dictionary(keyArb, value, { maxKeys: 5 }), fc.boolean(), (doc, indentSeq) => {
      const text = stringify(doc, { indentSeq })
      const simple = readSimpleYaml(text)
      if (simple !== undefined) assert.equal(simple, parse(text, { merge: true }), text)
    }),
    { numRuns: 3000 },
  )
})

test('property: random lines of YAML fragments read as yaml reads them, or not at all', () => {
  // mostly well-formed pieces, sometimes odd ones
  const pick = (good: string[], odd: string[]) =>
    fc.oneof({ arbitrary: fc.constantFrom(...good), weight: 8 }, { arbitrary: fc.constantFrom(...odd), weight: 1 })
  const line = fc.tuple(
    pick(['', '  ', '    '], [' ', '   ', '      ']),
    pick(['', '- '], ['-', '- - ', '-  ']),
    pick(['a', 'b', 'c', 'k-1'], ["'q'", '"d"', 'x y', 'true', '~', '', '#c', 'a', 'a']),
    pick([':', ': '], ['', ' :']),
    pick(
      ['', 'v', 'true', 'null', '{}', '[]', 'http://h:1', "'it''s'", '"d q"'],
      ['a #c', '1', 'x: y', '~', 'No', '-v', "'x", '"y\\"', '[a]'],
    ),
  )
  fc.assert(
    fc.property(fc.array(line, { minLength: 1, maxLength: 10 }), (ls) => {
      const text = ls.map((l) => l.join('')).join('\n') + '\n'
      const simple = readSimpleYaml(text)
      if (simple === undefined) return
      let expected: unknown
      try {
        expected = parse(text, { merge: true })
      } catch (e) {
        assert.unreachable(`read ${JSON.stringify(simple)} where yaml fails (${(e as Error).message}): ${JSON.stringify(text)}`)
      }
      assert.equal(simple, expected, JSON.stringify(text))
    }),
    { numRuns: 20000 },
  )
})

test.run()
