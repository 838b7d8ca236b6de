// Kuadrant policy-machinery's machinery/topology_test.go, ported: the fruit topologies, with the same
// inputs and expected outputs, compared as node sets, links walked from the roots, paths, and the DOT
// text read back as an edge set. Each test names the Go test it follows.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { TopologyCycleError, type TopologyNode } from '@statewright/topology'
import {
  assertLinks,
  dotEdges,
  edgeSet,
  fruit,
  fruitPolicy,
  fruitTopology,
  linkApplesToOranges,
  linkInfoFrom,
  linkOrangesToBananas,
  linkOrangesToPeaches,
  linkPeachesToApples,
  linkPeachesToLemons,
  linksFrom,
} from './pm-fixtures.ts'

const names = (ns: TopologyNode[]) => ns.map((n) => n.name).sort()
const locs = (ns: TopologyNode[]) => ns.map((n) => n.locator)
const pathNames = (ps: TopologyNode[][]) => ps.map((p) => p.map((n) => n.name).join('→')).sort()

// follows policy-machinery machinery/topology_test.go TestTopologyRoots
test('TestTopologyRoots: the apples are the roots', async () => {
  const v = await fruitTopology({
    apples: [fruit('apple-1'), fruit('apple-2')],
    oranges: [fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1'] })],
    links: [linkApplesToOranges],
    policies: [fruitPolicy('policy-1', { kind: 'Apple', name: 'apple-2' }), fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-1' })],
  })
  assert.equal(locs(v.targetables().roots()), ['apple.example.test:apple-1', 'apple.example.test:apple-2'])
  assert.equal(v.cycle(), undefined)
})

/** TestTopologyParents' and TestTopologyChildren's fruits: orange-1 below both apples, orange-2 below apple-2. */
const twoApplesTwoOranges = () =>
  fruitTopology({
    apples: [fruit('apple-1'), fruit('apple-2')],
    oranges: [
      fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1', 'apple-2'] }),
      fruit('orange-2', { namespace: 'my-namespace', appleParents: ['apple-2'] }),
    ],
    links: [linkApplesToOranges],
    policies: [fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-1' })],
  })

// follows policy-machinery machinery/topology_test.go TestTopologyParents
test('TestTopologyParents: orange-1 has two apples, orange-2 one', async () => {
  const v = await twoApplesTwoOranges()
  const t = v.targetables()
  assert.equal(names(t.parents('orange.example.test:my-namespace/orange-1')), ['apple-1', 'apple-2'])
  assert.equal(names(t.parents('orange.example.test:my-namespace/orange-2')), ['apple-2'])
  // in All(), the policy is a parent too
  assert.equal(names(v.all().parents('orange.example.test:my-namespace/orange-1')), ['apple-1', 'apple-2', 'policy-2'])
})

// follows policy-machinery machinery/topology_test.go TestTopologyChildren
test('TestTopologyChildren: apple-1 has one orange, apple-2 two', async () => {
  const v = await twoApplesTwoOranges()
  const t = v.targetables()
  assert.equal(names(t.children('apple.example.test:apple-1')), ['orange-1'])
  assert.equal(names(t.children('apple.example.test:apple-2')), ['orange-1', 'orange-2'])
})

// follows policy-machinery machinery/topology_test.go TestTopologyPaths (four subtests)
test('TestTopologyPaths: single, multiple, trivial and no path', async () => {
  const v = await fruitTopology({
    apples: [fruit('apple-1')],
    oranges: [
      fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1'], childBananas: ['banana-1'] }),
      fruit('orange-2', { namespace: 'my-namespace', appleParents: ['apple-1'], childBananas: ['banana-1'] }),
    ],
    bananas: [fruit('banana-1')],
    links: [linkApplesToOranges, linkOrangesToBananas],
    policies: [fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-1' })],
  })
  const t = v.targetables()
  const A = 'apple.example.test:apple-1'
  const O1 = 'orange.example.test:my-namespace/orange-1'
  const B = 'banana.example.test:banana-1'
  assert.equal(pathNames(t.paths(O1, B)), ['orange-1→banana-1'], 'single path')
  assert.equal(pathNames(t.paths(A, B)), ['apple-1→orange-1→banana-1', 'apple-1→orange-2→banana-1'], 'multiple paths')
  assert.equal(pathNames(t.paths(A, A)), ['apple-1'], 'trivial path')
  assert.equal(pathNames(t.paths(B, A)), [], 'no path')
})

// follows policy-machinery machinery/topology_test.go TestFruitTopology (four subtests)
test('TestFruitTopology: empty, single node, multiple gvk, complex topology', async () => {
  const cases: Array<{ name: string; o: Parameters<typeof fruitTopology>[0]; expected: Record<string, string[]> }> = [
    { name: 'empty', o: { links: [] }, expected: {} },
    { name: 'single node', o: { apples: [fruit('my-apple')], links: [] }, expected: { 'my-apple': [] } },
    {
      name: 'multiple gvk',
      o: {
        apples: [fruit('my-apple')],
        oranges: [fruit('my-orange', { namespace: 'my-namespace', appleParents: ['my-apple'] })],
        policies: [fruitPolicy('my-policy', { kind: 'Orange', name: 'my-orange' })],
        links: [],
      },
      expected: { 'my-apple': ['my-orange'] },
    },
    {
      name: 'complex topology',
      o: {
        apples: [fruit('apple-1'), fruit('apple-2')],
        oranges: [
          fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1', 'apple-2'], childBananas: ['banana-1', 'banana-2'] }),
          fruit('orange-2', { namespace: 'my-namespace', appleParents: ['apple-2'], childBananas: ['banana-2', 'banana-3'] }),
        ],
        bananas: [fruit('banana-1'), fruit('banana-2'), fruit('banana-3')],
        policies: [
          fruitPolicy('policy-1', { kind: 'Apple', name: 'apple-1' }),
          fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-2' }),
        ],
        links: [],
      },
      expected: {
        'apple-1': ['orange-1'],
        'apple-2': ['orange-1', 'orange-2'],
        'orange-1': ['banana-1', 'banana-2'],
        'orange-2': ['banana-2', 'banana-3'],
      },
    },
  ]
  for (const c of cases) {
    const v = await fruitTopology({ ...c.o, links: [linkApplesToOranges, linkOrangesToBananas] })
    assertLinks(linksFrom(v.targetables()), c.expected, c.name)
    // the DOT holds exactly the view's edges: the links and each policy's edge to its target
    assert.equal(dotEdges(v.toDot()), edgeSet(v), c.name)
    assert.equal(v.edges().filter((e) => e.policy).length, (c.o.policies ?? []).length, `${c.name}: each policy's edge to its target`)
  }
})

// follows policy-machinery machinery/topology_test.go TestTopologyWithRuntimeObjects
test('TestTopologyWithRuntimeObjects: objects linked from targetables stay out of Targetables()', async () => {
  const v = await fruitTopology({
    infos: [fruit('info-1', { ref: 'apple.example.test:apple-1' }), fruit('info-2', { ref: 'orange.example.test:my-namespace/orange-1' })],
    apples: [fruit('apple-1')],
    oranges: [
      fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1'] }),
      fruit('orange-2', { namespace: 'my-namespace', appleParents: ['apple-1'] }),
    ],
    policies: [fruitPolicy('policy-1', { kind: 'Apple', name: 'apple-1' }), fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-1' })],
    links: [linkApplesToOranges, linkInfoFrom('Apple'), linkInfoFrom('Orange')],
  })
  const links = linksFrom(v.targetables())
  assert.equal(Object.keys(links).length, 3)
  assertLinks(links, { 'apple-1': ['orange-1', 'orange-2'], 'orange-1': [], 'orange-2': [] })
  assert.equal(names(v.objects().items()), ['info-1', 'info-2'])
  assert.equal(dotEdges(v.toDot()), edgeSet(v))
})

const loopFruits = (cyclic: boolean) => ({
  apples: [fruit('apple-1'), fruit('apple-2'), ...(cyclic ? [] : [fruit('apple-3')])],
  oranges: cyclic
    ? [
        fruit('orange-1', { appleParents: ['apple-1'] }),
        fruit('orange-2', { appleParents: ['apple-1', 'apple-2'] }),
        fruit('orange-3', { appleParents: ['apple-2'] }),
      ]
    : [
        fruit('orange-1', { appleParents: ['apple-1'] }),
        fruit('orange-2', { appleParents: ['apple-2'] }),
        fruit('orange-3', { appleParents: ['apple-3', 'apple-1'] }),
        fruit('orange-4', { appleParents: ['apple-3'] }),
      ],
  peaches: cyclic
    ? [
        fruit('peach-1', { orangeParents: ['orange-1'], childApples: ['apple-1'] }),
        fruit('peach-2', { orangeParents: ['orange-1', 'orange-2', 'orange-3'] }),
      ]
    : [fruit('peach-1', { orangeParents: ['orange-1'] }), fruit('peach-2', { orangeParents: ['orange-1', 'orange-3', 'orange-4'] })],
  lemons: [fruit('lemon-1', { peachParents: ['peach-1'] })],
  links: [linkPeachesToLemons, linkApplesToOranges, linkPeachesToApples, linkOrangesToPeaches],
})

// follows policy-machinery machinery/topology_test.go TestTopologyHasLoops
test('TestTopologyHasLoops: a loop is detected', async () => {
  const v = await fruitTopology(loopFruits(true))
  const err = v.cycle()
  assert.instance(err, TopologyCycleError)
  assert.equal(err!.cycle, [
    'apple.example.test:apple-1',
    'orange.example.test:orange-1',
    'peach.example.test:peach-1',
    'apple.example.test:apple-1',
  ])
  assert.match(err!.message, /topology has a cycle: apple\.example\.test:apple-1 -> /)
  assert.throws(
    () => v.check(),
    (e: unknown) => e instanceof TopologyCycleError,
  )
})

// follows policy-machinery machinery/topology_test.go TestTopologyHasLoopsAndAllowed
test('TestTopologyHasLoopsAndAllowed: with allowLoops, no error and a topology', async () => {
  const v = await fruitTopology({ ...loopFruits(true), allowLoops: true })
  assert.equal(v.cycle(), undefined)
  v.check()
  assert.ok(v.nodes().length > 0)
  // paths skip the edge that closes the loop
  assert.equal(pathNames(v.targetables().paths('apple.example.test:apple-1', 'lemon.example.test:lemon-1')), [
    'apple-1→orange-1→peach-1→lemon-1',
  ])
})

// follows policy-machinery machinery/topology_test.go TestTopologyHasNoLoops
test('TestTopologyHasNoLoops: kinds that could loop, objects that do not: no error', async () => {
  const v = await fruitTopology(loopFruits(false))
  assert.equal(v.cycle(), undefined)
  v.check()
})

const allFixture = (withPolicyInfo: boolean) => ({
  infos: [
    fruit('info-1', { ref: 'apple.example.test:apple-1' }),
    fruit('info-2', { ref: 'orange.example.test:my-namespace/orange-1' }),
    ...(withPolicyInfo ? [fruit('info-3', { ref: 'fruitpolicy.test:my-namespace/policy-1' })] : []),
  ],
  apples: [fruit('apple-1')],
  oranges: [
    fruit('orange-1', { namespace: 'my-namespace', appleParents: ['apple-1'] }),
    fruit('orange-2', { namespace: 'my-namespace', appleParents: ['apple-1'] }),
  ],
  policies: [fruitPolicy('policy-1', { kind: 'Apple', name: 'apple-1' }), fruitPolicy('policy-2', { kind: 'Orange', name: 'orange-1' })],
  links: [
    linkApplesToOranges,
    linkInfoFrom('Apple'),
    linkInfoFrom('Orange'),
    // policy-machinery's LinkInfoFrom("Policy", policies): a link from the policy kind (issue 26, cause 4)
    ...(withPolicyInfo ? [linkInfoFrom('FruitPolicy')] : []),
  ],
})

// follows policy-machinery machinery/topology_test.go TestTopologyAll
test('TestTopologyAll: in All(), policies are roots, parents of their targets, and may link to objects', async () => {
  const v = await fruitTopology(allFixture(true))
  const links = linksFrom(v.all())
  assert.equal(Object.keys(links).length, 8)
  assertLinks(links, {
    'policy-1': ['apple-1', 'info-3'],
    'policy-2': ['orange-1'],
    'apple-1': ['orange-1', 'orange-2', 'info-1'],
    'orange-1': ['info-2'],
    'orange-2': [],
    'info-1': [],
    'info-2': [],
    'info-3': [],
  })
  assert.equal(dotEdges(v.toDot()), edgeSet(v))
})

test('a link declared from a policy kind: children(policy), edges() and DOT show it (issue 26, cause 4)', async () => {
  const v = await fruitTopology(allFixture(true))
  const P1 = 'fruitpolicy.test:my-namespace/policy-1'
  const I3 = 'info.example.test:info-3'
  assert.equal(locs(v.parents(I3)), [P1])
  assert.equal(locs(v.children(P1)), [I3], 'the policy has the child its link declares')
  assert.ok(
    v.edges().some((e) => e.from === P1 && e.to === I3 && !e.policy),
    'edges() has the link',
  )
  assert.ok(dotEdges(v.toDot()).includes(`${P1} -> ${I3}`), 'so has the DOT')
  assert.equal(pathNames(v.paths(P1, I3)), ['policy-1→info-3'], 'a path from a policy by links')
})

// follows policy-machinery machinery/topology_test.go TestTopologyAllPaths (four subtests)
test('TestTopologyAllPaths: policy to targetable, targetable to targetable, targetable to object, policy to object', async () => {
  const v = await fruitTopology(allFixture(false))
  const all = v.all()
  const P1 = 'fruitpolicy.test:my-namespace/policy-1'
  const A = 'apple.example.test:apple-1'
  const O1 = 'orange.example.test:my-namespace/orange-1'
  const I2 = 'info.example.test:info-2'
  assert.equal(pathNames(all.paths(P1, A)), ['policy-1→apple-1'], 'policy to targetable (issue 26, cause 4)')
  assert.equal(pathNames(all.paths(A, O1)), ['apple-1→orange-1'], 'targetable to targetable')
  assert.equal(pathNames(all.paths(O1, I2)), ['orange-1→info-2'], 'targetable to object')
  assert.equal(pathNames(all.paths(P1, I2)), ['policy-1→apple-1→orange-1→info-2'], 'policy to object')
  // the collections keep to their items
  assert.equal(pathNames(v.targetables().paths(P1, A)), [], 'a policy is no item of Targetables()')
  assert.equal(pathNames(v.targetables().paths(O1, I2)), [], 'nor is an object')
})

test('collections: items filtered, roots and parents among their items', async () => {
  const v = await fruitTopology(allFixture(true))
  assert.equal(names(v.policies().items()), ['policy-1', 'policy-2'])
  assert.equal(names(v.policies().items((n) => n.name.endsWith('2'))), ['policy-2'])
  assert.equal(
    names(
      v.all().items(
        (n) => n.kind === 'Orange',
        (n) => n.name === 'orange-2',
      ),
    ),
    ['orange-2'],
  )
  assert.equal(names(v.targetables().items()), ['apple-1', 'orange-1', 'orange-2'])
  assert.equal(names(v.all().roots()), ['policy-1', 'policy-2'])
  assert.equal(names(v.objects().roots()), ['info-1', 'info-2', 'info-3'], 'no object has an object parent')
  assert.equal(names(v.objects().parents('info.example.test:info-1')), [], 'its parent apple-1 is no object')
  assert.equal(names(v.all().parents('info.example.test:info-1')), ['apple-1'])
})

test.run()
