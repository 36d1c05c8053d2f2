import { test, expect } from './fixtures';
import { Kube } from './kube';
import { ExtraPortico } from './spawn';

/** A ServiceAccount `name` that may view namespace `ns`, and a token for it. */
async function viewerToken(kube: Kube, ns: string, name: string): Promise<string> {
  await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name } });
  await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    metadata: { name: `${name}-view` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  });
  const issued = await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 },
  });
  return issued.status.token;
}

test('token mode: the token never appears in a page, a URL or the logs', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('token');
  const token = await viewerToken(kube, ns, 'deployer');

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

test('what one person stars in a shared browser, the next person signed in there does not see; it is there again at their next sign-in', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('kept');
  const ada = await viewerToken(kube, ns, 'ada');
  const bob = await viewerToken(kube, ns, 'bob');
  const name = `kept-${Date.now().toString(36)}`;
  await kube.ok('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name }, data: { a: '1' } });

  const portico = await ExtraPortico.start({ PORTICO_IDENTITY: 'token' });
  try {
    const base = portico.origin;
    const signIn = async (token: string, then: string) => {
      await page.goto(`${base}${then}`);
      await page.locator('#token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page).toHaveURL(`${base}${then}`);
      await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    };
    const starred = page.getByTestId('home-saved').getByTestId('saved-item').filter({ hasText: name });

    await signIn(ada, `/r/core/v1/configmaps/${ns}/${name}`);
    await page.getByTestId('star').click();
    await expect(page.getByTestId('star')).toHaveAttribute('aria-pressed', 'true');
    await page.goto(`${base}/`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(starred).toHaveCount(1);
    await page.getByTestId('sign-out').click();

    // Bob, in the same browser: Ada's star is kept, under her name, not shown to him.
    await signIn(bob, '/');
    await expect(page.getByTestId('signed-in-as')).toContainText(`system:serviceaccount:${ns}:bob`);
    await expect(starred).toHaveCount(0);
    const keys = await page.evaluate(() => Object.keys(localStorage));
    expect(keys).toContain(`portico.saved@system:serviceaccount:${ns}:ada`);
    await page.goto(`${base}/r/core/v1/configmaps/${ns}/${name}`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.getByTestId('star')).toHaveAttribute('aria-pressed', 'false');
    await page.getByTestId('sign-out').click();

    await signIn(ada, '/');
    await expect(starred).toHaveCount(1);
  } finally {
    portico.stop();
  }
});
