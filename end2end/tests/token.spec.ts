import { test, expect } from '@playwright/test';
import { spawn, ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Kube } from './kube';

// A second Portico in token mode beside the suite's own (same cluster), so that the
// whole sign-in path runs in a browser and its logs can be read.
const root = join(__dirname, '..', '..');
const kubeconfig = process.env.PORTICO_E2E_KUBECONFIG ?? join(__dirname, '..', '.state', 'kubeconfig.json');

function freePort(): Promise<number> {
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

test('token mode: the token never appears in a page, a URL or the logs', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('token');
  await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'deployer' } });
  await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    metadata: { name: 'deployer-view' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: ns }],
  });
  const issued = await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts/deployer/token`, {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 },
  });
  const token: string = issued.status.token;

  const port = await freePort();
  let logs = '';
  const portico: ChildProcess = spawn(join(root, 'target', 'debug', 'portico'), [], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      PORTICO_LISTEN: `127.0.0.1:${port}`,
      PORTICO_IDENTITY: 'token',
      PORTICO_RECONCILER: 'off',
      PORTICO_LOG: 'debug',
      LEPTOS_SITE_ROOT: join(root, 'target', 'site'),
    },
  });
  portico.stdout?.on('data', (d) => (logs += d));
  portico.stderr?.on('data', (d) => (logs += d));
  try {
    const base = `http://127.0.0.1:${port}`;
    await expect.poll(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status, { timeout: 30_000 }).toBe(200);

    await page.goto(`${base}/crds`);
    await expect(page).toHaveURL(`${base}/login`);
    await page.locator('#token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(`${base}/crds`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.locator('table')).toBeVisible();

    const cookies = await page.context().cookies(base);
    const session = cookies.find((c) => c.name === 'portico_session');
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe('Strict');
    expect(session?.value).not.toContain(token);
    expect(await page.evaluate(() => document.cookie)).not.toContain('portico_session');

    // Acting as the account: it may view its namespace but not create there.
    await page.goto(`${base}/r/iksoon.test.com/v1/crdplural?ns=${ns}`);
    await expect(page.getByTestId('create-link')).toHaveAttribute('aria-disabled', 'true');
    await page.screenshot({ path: 'test-results/token-mode.png' });

    expect(page.url()).not.toContain(token);
    expect(await page.content()).not.toContain(token);
    expect(logs).toContain('sign-in');
    expect(logs).not.toContain(token);
  } finally {
    portico.kill('SIGTERM');
  }
});
