// Starts another Portico beside the suite's own (same cluster, its own settings), for
// tests of modes the main server does not run in. Its logs are collected.
import { spawn, ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from '@playwright/test';

const root = join(__dirname, '..', '..');

/** The build under test (PORTICO_E2E_BUILD, as serve.sh reads it). */
export const release = process.env.PORTICO_E2E_BUILD === 'release';
const binary = release ? join(root, 'target', 'bundle', 'portico') : join(root, 'target', 'debug', 'portico');
const site = release ? join(root, 'target', 'bundle', 'site') : join(root, 'target', 'site');
const kubeconfig = process.env.PORTICO_E2E_KUBECONFIG ?? join(__dirname, '..', '.state', 'kubeconfig.json');

/** A loopback port free when asked (nothing listens on it once this resolves). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export class ExtraPortico {
  logs = '';
  constructor(private child: ChildProcess, readonly origin: string) {
    child.stdout?.on('data', (d) => (this.logs += d));
    child.stderr?.on('data', (d) => (this.logs += d));
  }

  /** Starts one with `env` over the defaults (or the settings for its own origin);
   * resolves once /readyz answers. */
  static async start(
    env: Record<string, string> | ((origin: string) => Record<string, string>),
  ): Promise<ExtraPortico> {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const settings = typeof env === 'function' ? env(origin) : env;
    const child = spawn(binary, [], {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        PORTICO_LISTEN: `127.0.0.1:${port}`,
        PORTICO_RECONCILER: 'off',
        PORTICO_SITE_ROOT: site,
        ...settings,
      },
    });
    const portico = new ExtraPortico(child, origin);
    await expect
      .poll(async () => (await fetch(`${portico.origin}/readyz`).catch(() => null))?.status, { timeout: 30_000 })
      .toBe(200);
    return portico;
  }

  stop() {
    this.child.kill('SIGTERM');
  }
}
