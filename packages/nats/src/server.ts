// A nats-server child process for tests, examples and benchmarks: JetStream on, loopback only, a
// store directory of its own, capped memory and file store. Restartable on the same port and store
// (what a real server restart looks like to a client), or on a fresh store (history lost).
// The binary is found on PATH or in /usr/sbin (Debian installs it there, off a non-root PATH); when
// it is absent, start() fails with the install command.
import { ConfigError, ServerError } from './errors.ts'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface NatsServerOptions {
  /** Port (default: a free one the server picks). */
  port?: number
  /** JetStream store directory (default: a new temporary directory, removed by stop({ remove: true })). */
  storeDir?: string
  /** JetStream caps (defaults 64 MB memory, 256 MB file). */
  maxMemoryStore?: string
  maxFileStore?: string
  /** Milliseconds to wait for "Server is ready" (default 10 000). */
  readyTimeoutMs?: number
}

export interface RunningNatsServer {
  readonly url: string
  readonly port: number
  readonly storeDir: string
  /** Stops the process (SIGTERM, then SIGKILL after 5 s); with remove, deletes the store directory. */
  stop(opts?: { remove?: boolean }): Promise<void>
  /** Stops and starts again on the same port; `fresh: true` starts on an empty store (history lost). */
  restart(opts?: { fresh?: boolean }): Promise<void>
}

const INSTALL = 'apt-get install -y nats-server'

/** The nats-server binary: on PATH or /usr/sbin; throws naming the install command when absent. */
export function natsServerBinary(): string {
  const which = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' })
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim()
  for (const p of ['/usr/sbin/nats-server', '/usr/local/sbin/nats-server', '/usr/local/bin/nats-server']) if (existsSync(p)) return p
  throw new ConfigError(`nats-server not found on PATH or in /usr/sbin: install it with \`${INSTALL}\``)
}

/** Starts nats-server with JetStream on 127.0.0.1; resolves once it is ready. */
export async function startNatsServer(opts: NatsServerOptions = {}): Promise<RunningNatsServer> {
  const bin = natsServerBinary()
  const ownDir = opts.storeDir === undefined
  let storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'sw-nats-'))
  let port = opts.port ?? -1
  let child: ChildProcess | undefined

  const launch = async (): Promise<void> => {
    const conf = join(storeDir, 'nats.conf')
    writeFileSync(
      conf,
      `jetstream {\n  store_dir: ${JSON.stringify(storeDir)}\n  max_memory_store: ${opts.maxMemoryStore ?? '64MB'}\n  max_file_store: ${opts.maxFileStore ?? '256MB'}\n}\n`,
    )
    const proc = spawn(bin, ['-c', conf, '-js', '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    await new Promise<void>((resolve, reject) => {
      let log = ''
      const timer = setTimeout(
        () => fail(new ServerError(`nats-server not ready after ${opts.readyTimeoutMs ?? 10_000} ms:\n${log.slice(-2000)}`)),
        opts.readyTimeoutMs ?? 10_000,
      )
      const fail = (err: Error) => {
        clearTimeout(timer)
        proc.kill('SIGKILL')
        reject(err)
      }
      const onData = (b: Buffer) => {
        log += b.toString()
        const m = log.match(/Listening for client connections on 127\.0\.0\.1:(\d+)/)
        if (m) port = Number(m[1])
        if (log.includes('Server is ready')) {
          clearTimeout(timer)
          proc.stdout!.off('data', onData)
          proc.stderr!.off('data', onData)
          proc.stdout!.resume()
          proc.stderr!.resume()
          resolve()
        }
      }
      proc.stdout!.on('data', onData)
      proc.stderr!.on('data', onData)
      proc.once('exit', (code, sig) =>
        fail(new ServerError(`nats-server exited (${code ?? sig}) before it was ready:\n${log.slice(-2000)}`)),
      )
      proc.once('error', (err) => fail(err))
    })
    proc.removeAllListeners('exit')
  }

  const kill = async (): Promise<void> => {
    const proc = child
    child = undefined
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => proc.kill('SIGKILL'), 5_000)
      proc.once('exit', () => {
        clearTimeout(t)
        resolve()
      })
      proc.kill('SIGTERM')
    })
  }

  await launch()
  return {
    get url() {
      return `nats://127.0.0.1:${port}`
    },
    get port() {
      return port
    },
    get storeDir() {
      return storeDir
    },
    async stop(o = {}) {
      await kill()
      if (o.remove ?? ownDir) rmSync(storeDir, { recursive: true, force: true })
    },
    async restart(o = {}) {
      await kill()
      if (o.fresh) {
        if (ownDir) rmSync(storeDir, { recursive: true, force: true })
        storeDir = mkdtempSync(join(tmpdir(), 'sw-nats-'))
      }
      await launch()
    },
  }
}
