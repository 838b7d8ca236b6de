// A Manager's command line: controller-runtime's usual flags (and an environment variable for each),
// so that a deployment configures any statewright operator the way it configures a kubebuilder one.
// Parsed by node's util.parseArgs (strict: an unknown flag is an error, as Go's flag package makes it).
// Invariants:
// - A flag beats its environment variable; neither set leaves the Manager's own default.
// - A bad value is a ConfigError naming the flag (or the variable) and what it accepts; nothing is
//   half-applied.
// - `--help` is an answer, not an error: the usage text, every flag with its variable and default.
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { ConfigError } from '../errors.ts'
import { createLogger, type LogLevel } from '../logging.ts'
import type { ManagerOptions } from './options.ts'

/** What the flags say; an absent field was not given (flag or variable). */
export interface ManagerFlags {
  /** `--metrics-bind-address`: the HTTP server's address (metrics, statusz, statedb); null: "0", no server. */
  metricsBindAddress?: { host: string; port: number } | null
  /** `--health-probe-bind-address`: /healthz and /readyz, on their own server when the address differs. */
  healthProbeBindAddress?: { host: string; port: number } | null
  leaderElect?: boolean
  leaderElectionNamespace?: string
  leaderElectionId?: string
  /** `--kubeconfig`: a kubeconfig file. */
  kubeconfig?: string
  /** `--zap-log-level` (or `--log-level`). */
  logLevel?: LogLevel
  /** `--webhook-cert-path`: the directory with the webhook server's tls.crt and tls.key (kubebuilder's flag). */
  webhookCertPath?: string
  /** `--webhook-port`: the webhook server's port (default 9443). */
  webhookPort?: number
}

export type ParsedFlags =
  | { help: true; usage: string }
  | { help: false; flags: ManagerFlags; extra: Record<string, string | boolean | undefined>; positionals: string[] }

interface FlagSpec {
  name: string
  env: string
  type: 'string' | 'boolean'
  help: string
}
const FLAGS: FlagSpec[] = [
  {
    name: 'metrics-bind-address',
    env: 'METRICS_BIND_ADDRESS',
    type: 'string',
    help: 'address of the metrics and status server, [host]:port; "0" disables it (default 127.0.0.1:8080)',
  },
  {
    name: 'health-probe-bind-address',
    env: 'HEALTH_PROBE_BIND_ADDRESS',
    type: 'string',
    help: 'address of /healthz and /readyz, [host]:port; "0" or the metrics address: served with the metrics',
  },
  {
    name: 'leader-elect',
    env: 'LEADER_ELECT',
    type: 'boolean',
    help: 'run the leader-only parts only while holding a Lease (default false)',
  },
  {
    name: 'leader-election-namespace',
    env: 'LEADER_ELECTION_NAMESPACE',
    type: 'string',
    help: "the Lease's namespace (default $POD_NAMESPACE)",
  },
  { name: 'leader-election-id', env: 'LEADER_ELECTION_ID', type: 'string', help: "the Lease's name (default the manager's name)" },
  { name: 'kubeconfig', env: 'KUBECONFIG', type: 'string', help: 'kubeconfig file (default $KUBECONFIG, ~/.kube/config, then in-cluster)' },
  {
    name: 'zap-log-level',
    env: 'LOG_LEVEL',
    type: 'string',
    help: 'trace, debug, info, warn, error, fatal, silent, or a zap verbosity 1-10 (debug, >1 trace)',
  },
  {
    name: 'webhook-cert-path',
    env: 'WEBHOOK_CERT_PATH',
    type: 'string',
    help: 'directory with the webhook certificate, tls.crt and tls.key (default /tmp/k8s-webhook-server/serving-certs)',
  },
  { name: 'webhook-port', env: 'WEBHOOK_PORT', type: 'string', help: 'port of the webhook server, 0 picks a free one (default 9443)' },
]
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

/** The usage text `--help` prints. */
export function managerUsage(name: string, extra: ParseArgsConfig['options'] = {}): string {
  const rows = [
    ...FLAGS.map((f) => [`--${f.name}${f.type === 'string' ? ' <value>' : ''}`, `${f.help} [$${f.env}]`]),
    ['--log-level <value>', 'the same as --zap-log-level'],
    ...Object.entries(extra ?? {}).map(([k, o]) => [`--${k}${o.type === 'string' ? ' <value>' : ''}`, '']),
    ['-h, --help', 'this text'],
  ]
  const w = Math.max(...rows.map((r) => r[0]!.length)) + 2
  return `Usage: ${name} [flags]\n\nFlags:\n${rows.map(([a, b]) => `  ${a!.padEnd(w)}${b}`.trimEnd()).join('\n')}\n`
}

/**
 * Reads the flags from `argv` (default process.argv after the script) and the environment. Throws a
 * ConfigError naming the flag for an unknown flag or a bad value. `extra` declares the operator's own
 * flags (parseArgs options), returned in `extra`.
 */
export function parseManagerFlags(
  name: string,
  o: { argv?: readonly string[]; env?: NodeJS.ProcessEnv; extra?: ParseArgsConfig['options'] } = {},
): ParsedFlags {
  const argv = [...(o.argv ?? process.argv.slice(2))]
  const env = o.env ?? process.env
  const options: NonNullable<ParseArgsConfig['options']> = { ...(o.extra ?? {}) }
  for (const f of FLAGS) options[f.name] = { type: f.type }
  options['log-level'] = { type: 'string' }
  options.help = { type: 'boolean', short: 'h' }
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] }
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true }) as typeof parsed
  } catch (err) {
    const msg = (err as Error).message
    const flag = /'([^' ]+)/.exec(msg)?.[1]
    throw new ConfigError(`${name}: ${flag ? `flag ${flag}: ` : ''}${msg.replace(/\. To specify.*$/s, '')} (--help lists the flags)`, {
      cause: err,
    })
  }
  const v = parsed.values
  if (v.help) return { help: true, usage: managerUsage(name, o.extra) }
  const given = (f: string): { value: string | boolean; from: string } | undefined => {
    const spec = FLAGS.find((x) => x.name === f)!
    if (v[f] !== undefined) return { value: v[f]!, from: `flag --${f}` }
    const e = env[spec.env]
    return e === undefined || e === '' ? undefined : { value: e, from: `$${spec.env}` }
  }
  const flags: ManagerFlags = {}
  const metrics = given('metrics-bind-address')
  if (metrics) flags.metricsBindAddress = address(String(metrics.value), metrics.from)
  const probes = given('health-probe-bind-address')
  if (probes) flags.healthProbeBindAddress = address(String(probes.value), probes.from)
  const le = given('leader-elect')
  if (le) flags.leaderElect = boolean(le.value, le.from)
  const ns = given('leader-election-namespace') ?? (env.POD_NAMESPACE ? { value: env.POD_NAMESPACE, from: '$POD_NAMESPACE' } : undefined)
  if (ns) flags.leaderElectionNamespace = String(ns.value)
  const id = given('leader-election-id')
  if (id) flags.leaderElectionId = String(id.value)
  if (flags.leaderElect && !flags.leaderElectionNamespace)
    throw new ConfigError(`${name}: flag --leader-elect needs --leader-election-namespace (or $POD_NAMESPACE) for its Lease`)
  // only the flag: $KUBECONFIG (a list of files) is the cluster's own default already
  if (typeof v.kubeconfig === 'string') flags.kubeconfig = v.kubeconfig
  const level =
    v['zap-log-level'] !== undefined
      ? { value: v['zap-log-level']!, from: 'flag --zap-log-level' }
      : v['log-level'] !== undefined
        ? { value: v['log-level']!, from: 'flag --log-level' }
        : given('zap-log-level')
  if (level) flags.logLevel = logLevel(String(level.value), level.from)
  const certPath = given('webhook-cert-path')
  if (certPath) flags.webhookCertPath = String(certPath.value)
  const webhookPort = given('webhook-port')
  if (webhookPort) flags.webhookPort = port(String(webhookPort.value), webhookPort.from)
  const extra: Record<string, string | boolean | undefined> = {}
  for (const k of Object.keys(o.extra ?? {})) extra[k] = v[k]
  return { help: false, flags, extra, positionals: parsed.positionals }
}

/** "[host]:port" (host default 0.0.0.0: every interface, as Go's ":8080") or "0" (off). */
function address(s: string, from: string): { host: string; port: number } | null {
  if (s === '0') return null
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(s)
  const port = m ? Number(m[3]) : NaN
  if (!m || !(port >= 0 && port <= 65535))
    throw new ConfigError(
      `${from}: ${JSON.stringify(s)} is not an address: give [host]:port (":8080", "127.0.0.1:8080") or "0" to turn it off`,
    )
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port }
}

function port(s: string, from: string): number {
  const n = /^\d{1,5}$/.test(s) ? Number(s) : NaN
  if (!(n >= 0 && n <= 65535)) throw new ConfigError(`${from}: ${JSON.stringify(s)} is not a port (0-65535)`)
  return n
}

function boolean(v: string | boolean, from: string): boolean {
  if (typeof v === 'boolean') return v
  const s = v.toLowerCase()
  if (['1', 'true', 't', 'yes'].includes(s)) return true
  if (['0', 'false', 'f', 'no'].includes(s)) return false
  throw new ConfigError(`${from}: ${JSON.stringify(v)} is not a boolean (true or false)`)
}

function logLevel(v: string, from: string): LogLevel {
  const s = v.toLowerCase()
  if (LOG_LEVELS.includes(s)) return s as LogLevel
  if (s === 'panic' || s === 'dpanic') return 'fatal'
  if (/^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= 10) return Number(s) > 1 ? 'trace' : 'debug'
  throw new ConfigError(`${from}: ${JSON.stringify(v)} is not a log level: ${LOG_LEVELS.join(', ')}, or a zap verbosity 1-10`)
}

/** `o` with what the flags say put over it (flags win; a flag not given leaves the option). */
export function withFlags(o: ManagerOptions, f: ManagerFlags): ManagerOptions {
  const out: ManagerOptions = { ...o }
  if (f.logLevel && !o.logger) out.logger = createLogger({ level: f.logLevel })
  if (f.kubeconfig !== undefined) {
    delete out.cluster
    out.kubeconfig = f.kubeconfig
  }
  const metrics = f.metricsBindAddress
  const probes = f.healthProbeBindAddress
  const http = o.http === false ? {} : (o.http ?? {})
  if (metrics === null) {
    out.http = probes ? { ...http, ...probes, probesOnly: true, probesWithoutToken: true } : false
  } else {
    if (metrics) out.http = { ...http, ...metrics }
    const main = metrics ?? (o.http === false ? undefined : { host: http.host ?? '127.0.0.1', port: http.port ?? 8080 })
    // port 0 picks a free port: two addresses with port 0 are two servers
    if (probes && main && (probes.port === 0 || probes.host !== main.host || probes.port !== main.port)) out.probes = { ...probes }
    else if (probes && out.http !== false) out.http = { ...(out.http ?? {}), probesWithoutToken: true }
    else if (probes) out.http = { ...probes, probesOnly: true, probesWithoutToken: true }
  }
  if (f.webhookCertPath !== undefined || f.webhookPort !== undefined)
    out.webhooks = {
      ...(o.webhooks ?? {}),
      ...(f.webhookCertPath !== undefined ? { certDir: f.webhookCertPath } : {}),
      ...(f.webhookPort !== undefined ? { port: f.webhookPort } : {}),
    }
  if (f.leaderElect === false) delete out.leaderElection
  if (f.leaderElect)
    out.leaderElection = {
      ...(o.leaderElection ?? {}),
      namespace: f.leaderElectionNamespace!,
      ...(f.leaderElectionId ? { name: f.leaderElectionId } : {}),
    }
  return out
}
