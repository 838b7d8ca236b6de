// The web view's static files (ui/: index.html, style.css and its ES modules: app.js routes to the
// views of ui/views/, api.js and dom.js serve them), for a server that shows them: the controller's
// inspection handler serves them at /ui/ when this package is installed.
// Invariants: only the files listed here are ever served (a name is looked up, never joined into a
// path: `views/table.js` is a key of the list, not a path to resolve); they hold no data (the page
// reads everything through the token-guarded endpoints), and are read from disk once.
import { readFileSync } from 'node:fs'

const UI_DIR = new URL('../ui/', import.meta.url)
const JS = 'text/javascript; charset=utf-8'
const UI_FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'app.js': JS,
  'api.js': JS,
  'dom.js': JS,
  'time.js': JS,
  'types.js': JS,
  'views/health.js': JS,
  'views/login.js': JS,
  'views/object.js': JS,
  'views/table.js': JS,
  'views/tables.js': JS,
  'views/topology.js': JS,
}
let cache: Map<string, Buffer> | undefined

/** A file of the web view and its content type, or undefined for any other name. */
export function uiFile(name: string): { body: Buffer; contentType: string } | undefined {
  if (!Object.hasOwn(UI_FILES, name)) return undefined
  cache ??= new Map(Object.keys(UI_FILES).map((f) => [f, readFileSync(new URL(f, UI_DIR))]))
  return { body: cache.get(name)!, contentType: UI_FILES[name]! }
}
