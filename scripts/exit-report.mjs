// Loaded into every test process by scripts/test.mjs. When a folder's tests finished but its process
// did not exit, the runner sends SIGUSR2 before it kills the process: this prints what still keeps the
// event loop alive (the kinds of resources, timers counted; sockets with their addresses, servers,
// child processes), so that the FAIL line comes with its cause. A signal listener does not keep a
// process alive by itself.
process.on('SIGUSR2', () => {
  const show = (h) => {
    const name = h?.constructor?.name ?? typeof h
    if (name === 'Timeout') {
      const fn = h._onTimeout
      const src = fn ? fn.name || String(fn).replace(/\s+/g, ' ').slice(0, 160) : '?'
      return `Timeout ${h._idleTimeout} ms${h._repeat ? ' (interval)' : ''}: ${src}`
    }
    if (name === 'Socket' || name === 'TLSSocket')
      return `${name} ${h.localAddress ?? ''}:${h.localPort ?? ''} -> ${h.remoteAddress ?? ''}:${h.remotePort ?? ''}${h.destroyed ? ' (destroyed)' : ''}`
    if (name === 'Server') {
      const a = h.address?.()
      return `Server listening on ${a && typeof a === 'object' ? `${a.address}:${a.port}` : a}`
    }
    if (name === 'ChildProcess') return `ChildProcess ${h.pid}: ${(h.spawnargs ?? []).join(' ').slice(0, 160)}`
    return name
  }
  const handles = typeof process._getActiveHandles === 'function' ? process._getActiveHandles() : []
  // stdio pipes (sockets without an address) are every process's; timers are not handles in Node 20
  // (getActiveResourcesInfo counts them)
  const mine = (h) => !((h?.constructor?.name === 'Socket' || h?.constructor?.name === 'Pipe') && !h.remoteAddress && !h.localAddress)
  const lines = handles.filter((h) => (typeof h?.hasRef !== 'function' || h.hasRef()) && mine(h)).map(show)
  process.stderr.write(
    `\n[exit check] still running: ${JSON.stringify(process.getActiveResourcesInfo())}\n${lines.map((l) => `  ${l}`).join('\n')}\n`,
  )
})
