import { test, expect } from './fixtures';
import { Kube } from './kube';
import { ExtraPortico } from './spawn';

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

  const portico = await ExtraPortico.start({ PORTICO_IDENTITY: 'token', PORTICO_LOG: 'debug' });
  try {
    const base = portico.origin;
    await page.goto(`${base}/crds`);
    // Signing in comes back to the page asked for.
    await expect(page).toHaveURL(`${base}/login?then=%2Fcrds`);
    await page.locator('#token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(`${base}/crds`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.locator('table')).toBeVisible();

    const cookies = await page.context().cookies(base);
    const session = cookies.find((c) => c.name === '__Host-portico_session');
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
    expect(portico.logs).toContain('sign-in');
    expect(portico.logs).not.toContain(token);
  } finally {
    portico.stop();
  }
});
