// The topology: the server's SVG of every component's graph (GET /topology?format=svg, drawn by
// toSvg in packages/cli/src/graph.ts: the one renderer, its colours STATUS_COLORS), shown as it is,
// and a node's details on click (its locator, the policies targeting it, its status, its effective
// policy) from GET /topology's JSON.
// Invariants: the SVG is parsed as image/svg+xml, never as HTML, and only its drawing elements are
// kept (no script, foreignObject, link or event attribute survives, whatever it held); its texts are
// the server's, escaped there as the page escapes them; a `<g data-id data-n>` is matched to the JSON
// node n of its graph only when the node's id, escaped, is its data-id (the two reads may see
// different graphs: then they are read again, twice at most); the selection (n=) changes nothing
// but the highlight and the details.
import { api, json } from '../api.js'
import { enc, h, jsonNode, visible } from '../dom.js'

/** @typedef {import('../types.js').NamedGraph} NamedGraph */
/** @typedef {import('../types.js').GraphNode} GraphNode */
/** @typedef {import('../types.js').ViewContext} ViewContext */
/** @typedef {import('../types.js').Select} Select */

const SVG_NS = 'http://www.w3.org/2000/svg'
/** The elements toSvg writes; any other is dropped. */
const DRAWING = new Set(['svg', 'defs', 'marker', 'path', 'polyline', 'g', 'rect', 'text', 'tspan', 'title'])

/**
 * A node of the SVG with its graph's JSON node.
 * @typedef {{ el: SVGGElement, node: GraphNode, graph: NamedGraph['graph'] }} ShownNode
 */

/**
 * The server's SVG as a node of this document, drawing elements only (see the header).
 * @param {string} text
 * @returns {SVGSVGElement}
 */
function importSvg(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml')
  const root = doc.documentElement
  if (root.namespaceURI !== SVG_NS || root.localName !== 'svg' || doc.getElementsByTagName('parsererror').length)
    throw new Error('the server sent a topology SVG that does not parse')
  for (const el of [...root.querySelectorAll('*')]) if (el.namespaceURI !== SVG_NS || !DRAWING.has(el.localName)) el.remove()
  for (const el of [root, ...root.querySelectorAll('*')])
    for (const a of [...el.attributes]) if (/^on|href$/i.test(a.localName)) el.removeAttributeNode(a)
  const svg = document.importNode(root, true)
  if (!(svg instanceof SVGSVGElement)) throw new Error('the server sent a topology SVG that does not parse')
  return svg
}

/**
 * The SVG's nodes matched to the JSON's, or undefined when the two reads saw different graphs.
 * @param {SVGSVGElement} svg
 * @param {NamedGraph[]} graphs
 * @returns {ShownNode[] | undefined}
 */
function match(svg, graphs) {
  /** @type {ShownNode[]} */
  const out = []
  for (const gg of svg.querySelectorAll('g[data-graph]')) {
    const named = graphs[Number(gg.getAttribute('data-graph'))]
    if (!named) return undefined
    for (const el of gg.querySelectorAll('g[data-n]')) {
      const node = named.graph.nodes[Number(el.getAttribute('data-n'))]
      if (!node || visible(node.id) !== el.getAttribute('data-id')) return undefined
      out.push({ el: /** @type {SVGGElement} */ (el), node, graph: named.graph })
    }
  }
  const total = graphs.reduce((n, g) => n + new Set(g.graph.nodes.map((x) => x.id)).size, 0)
  return out.length === total ? out : undefined
}

/**
 * The statuses the SVG shows, each with the fill the server gave it (for the legend).
 * @param {ShownNode[]} nodes
 * @returns {Map<string, string>}
 */
function statusFills(nodes) {
  const out = new Map()
  for (const { el, node } of nodes) {
    const fill = el.querySelector('rect')?.getAttribute('fill')
    if (node.status && fill && !out.has(node.status)) out.set(node.status, fill)
  }
  return out
}

/**
 * A legend entry: a swatch of the fill (an SVG rect: the colour is an attribute, no inline style) and the status.
 * @param {string} status
 * @param {string} fill
 */
function legendItem(status, fill) {
  const swatch = document.createElementNS(SVG_NS, 'svg')
  for (const [k, v] of [
    ['width', '12'],
    ['height', '12'],
    ['class', 'swatch'],
  ])
    swatch.setAttribute(k, v)
  const rect = document.createElementNS(SVG_NS, 'rect')
  for (const [k, v] of [
    ['x', '0.5'],
    ['y', '0.5'],
    ['width', '11'],
    ['height', '11'],
    ['rx', '3'],
    ['fill', fill],
    ['stroke', '#999'],
  ])
    rect.setAttribute(k, v)
  swatch.append(rect)
  return h('span', {}, swatch, status)
}

/**
 * A node's details: kind and name, locator, status, the policies targeting it, its effective policy.
 * @param {GraphNode} n
 * @param {NamedGraph['graph']} graph
 */
function nodeCard(n, graph) {
  const policies = graph.edges.filter((e) => e.policy && e.to === n.id).map((e) => e.from)
  return h(
    'div',
    { class: 'card', id: 'node-detail' },
    h('h2', {}, `${n.kind} ${n.namespace ? `${n.namespace}/` : ''}${n.name}`),
    h(
      'dl',
      { class: 'kv' },
      h('dt', {}, 'id'),
      h('dd', { class: 'mono' }, n.id),
      n.status ? [h('dt', {}, 'status'), h('dd', {}, n.status)] : null,
      policies.length ? [h('dt', {}, 'policies'), h('dd', { class: 'mono' }, policies.join(', '))] : null,
    ),
    h('h2', {}, n.policy ? 'Policy' : 'Effective policy'),
    n.effective === undefined ? h('p', { class: 'muted' }, 'none') : h('pre', { class: 'json', id: 'effective' }, jsonNode(n.effective)),
  )
}

/**
 * The SVG and the JSON of the same graphs (read again when they differ).
 * @param {AbortSignal} signal
 * @returns {Promise<{ svg: SVGSVGElement, graphs: NamedGraph[], nodes: ShownNode[] }>}
 */
async function read(signal) {
  for (let attempt = 1; ; attempt++) {
    const [data, text] = await Promise.all([
      /** @type {Promise<{ graphs: NamedGraph[] }>} */ (json('/topology', signal)),
      api('/topology?format=svg', signal).then((r) => r.text()),
    ])
    const svg = importSvg(text)
    const nodes = match(svg, data.graphs)
    if (nodes) return { svg, graphs: data.graphs, nodes }
    if (attempt === 3) throw new Error('the topology changed while it was read: reload the page')
  }
}

/**
 * @param {ViewContext} ctx
 * @param {URLSearchParams} params
 * @returns {Promise<Select>}
 */
export async function topologyView(ctx, params) {
  const { svg, graphs, nodes } = await read(ctx.signal)
  const side = h('div', { id: 'node' })
  /** @param {string | null} id */
  const select = (id) => {
    const shown = nodes.find((s) => s.node.id === id)
    for (const s of nodes) s.el.classList.toggle('selected', s === shown)
    side.replaceChildren(
      shown ? nodeCard(shown.node, shown.graph) : h('div', { class: 'card muted' }, 'Click a node to see its effective policy.'),
    )
  }
  for (const { el, node } of nodes) {
    el.setAttribute('tabindex', '0')
    el.setAttribute('role', 'button')
    const open = () => {
      location.hash = `#/topology?n=${enc(node.id)}`
    }
    el.addEventListener('click', open)
    el.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault()
        open()
      }
    })
  }
  const fills = statusFills(nodes)
  ctx.root.replaceChildren(
    h(
      'div',
      {},
      h('h1', {}, 'Topology'),
      fills.size
        ? h(
            'p',
            { class: 'legend' },
            [...fills].map(([st, fill]) => legendItem(st, fill)),
          )
        : null,
      graphs.length ? h('div', { class: 'card topo' }, svg) : h('p', { class: 'muted' }, 'No component here has a topology.'),
      side,
    ),
  )
  select(params.get('n'))
  return select
}
