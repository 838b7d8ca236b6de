// The Manager's listeners: the HTTP server (metrics, health, /statusz, inspection), the probes alone
// on their own address (--health-probe-bind-address, no token), and the webhook server (HTTPS).
// Invariants:
// - listen() opens every configured listener or none stays open: a port in use fails the start
//   before anything touches the cluster, and what was opened is closed by close().
// - The webhook server listens only when a webhook was added (a controller without webhooks needs
//   no certificate).
// - close() is idempotent and closes all three.
import { ManagerServer, type HttpSources } from '../http.ts'
import type { Logger } from '@statewright/statedb'
import { WebhookServer } from '../webhooks/server.ts'
import type { ManagerOptions } from './options.ts'

export class ManagerServers {
  readonly webhooks: WebhookServer
  private readonly http: ManagerServer | undefined
  private readonly probes: ManagerServer | undefined
  url: string | undefined
  probesUrl: string | undefined
  webhookUrl: string | undefined

  constructor(options: ManagerOptions, sources: HttpSources, logger: Logger) {
    if (options.http !== false) this.http = new ManagerServer(options.http ?? {}, sources)
    this.webhooks = new WebhookServer(options.webhooks ?? {}, logger.child({ part: 'webhooks' }))
    if (options.probes)
      this.probes = new ManagerServer(
        { probesWithoutToken: true, ...options.probes, probesOnly: true },
        {
          db: sources.db,
          registry: undefined,
          live: sources.live,
          ready: sources.ready,
          status: () => ({}),
          reconcilers: () => [],
          graphs: () => [],
          onError: (err, path) => logger.error({ err, path }, 'http: answering a probe failed'),
        },
      )
  }

  async listen(): Promise<void> {
    if (this.http) this.url = await this.http.listen()
    if (this.probes) this.probesUrl = await this.probes.listen()
    if (this.webhooks.size) this.webhookUrl = await this.webhooks.listen()
  }

  async close(): Promise<void> {
    await this.http?.close()
    await this.probes?.close()
    await this.webhooks.close()
  }
}
