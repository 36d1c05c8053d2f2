// What the browser benchmarks share: the builds they can serve, starting Portico on a
// free loopback port, and Debian's Chromium with the flags this machine needs.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { chromium } from '@playwright/test';

const root = join(import.meta.dirname, '..', '..');

/** The debug build (after `cargo leptos build --frontend-only`) and the release
 *  directory `scripts/release.sh` assembles. */
export const builds = {
  debug: { binary: join(root, 'target', 'debug', 'portico'), site: join(root, 'target', 'site') },
  release: { binary: join(root, 'target', 'bundle', 'portico'), site: join(root, 'target', 'bundle', 'site') },
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Starts `binary` serving `site` against $KUBECONFIG's cluster (`env` added to its
 *  environment); resolves once ready. */
export async function startPortico({ binary, site }, env = {}) {
  const port = await freePort();
  const child = spawn(binary, [], {
    env: { ...process.env, PORTICO_LISTEN: `127.0.0.1:${port}`, PORTICO_SITE_ROOT: site, PORTICO_RECONCILER: 'off', PORTICO_LOG: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await fetch(`${origin}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) return { child, origin };
    if (Date.now() > deadline) throw new Error(`${binary} was not ready in 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}
