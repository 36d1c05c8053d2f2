import { test, expect } from './fixtures';
import { Kube } from './kube';
import { ExtraPortico } from './spawn';

test('under --base-path every link, asset, live stream and server call follows the prefix', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('base');
  await kube.ok('POST', `/apis/iksoon.test.com/v1/namespaces/${ns}/crdplural`, {
    apiVersion: 'iksoon.test.com/v1', kind: 'CrdKind', metadata: { name: 'existing' }, spec: { choice: 'mysql', replicas: 1 },
  });
  const portico = await ExtraPortico.start({ PORTICO_BASE_PATH: '/portico' });
  const failed: string[] = [];
  page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
  const violations: string[] = [];
  page.on('console', (m) => { if (m.text().includes('Content Security Policy')) violations.push(m.text()); });
  try {
    const base = `${portico.origin}/portico`;
    await page.goto(`${portico.origin}/`);
    await expect(page).toHaveURL(base);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.getByRole('heading', { name: /^Home/ })).toBeVisible();
    await page.getByRole('link', { name: 'Resource types' }).click();
    await expect(page).toHaveURL(`${base}/crds`);

    await page.locator('.nav-item', { hasText: 'CrdKind' }).click();
    await expect(page).toHaveURL(`${base}/r/iksoon.test.com/v1/crdplural`);
    await page.goto(`${base}/r/iksoon.test.com/v1/crdplural?ns=${ns}`);
    await expect(page.locator('tr[data-name="existing"]')).toBeVisible();
    // Live under the prefix: a row written now appears.
    await kube.ok('POST', `/apis/iksoon.test.com/v1/namespaces/${ns}/crdplural`, {
      apiVersion: 'iksoon.test.com/v1', kind: 'CrdKind', metadata: { name: 'arrived' }, spec: { choice: 'tomcat', replicas: 2 },
    });
    await expect(page.locator('tr[data-name="arrived"]')).toBeVisible();

    await page.getByTestId('create-link').click();
    await expect(page).toHaveURL(new RegExp(`^${base}/r/iksoon.test.com/v1/crdplural/new`));
    await page.locator('#f-metadata-name').fill('made-here');
    await page.locator('#f-spec-choice').fill('mysql');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect(page).toHaveURL(`${base}/r/iksoon.test.com/v1/crdplural/${ns}/made-here`);
    await expect(page.getByTestId('object-name')).toHaveText('made-here');
    await page.screenshot({ path: 'test-results/base-path.png' });
    // The top bar's links too.
    await page.getByRole('link', { name: 'Provision' }).click();
    await expect(page).toHaveURL(`${base}/provision`);
    await page.getByRole('link', { name: 'Resource types' }).click();
    await expect(page).toHaveURL(`${base}/crds`);
    expect(failed.filter((f) => !f.endsWith('/favicon.ico'))).toEqual([]);
    expect(violations, 'the strict CSP blocks nothing Portico needs').toEqual([]);
  } finally {
    portico.stop();
  }
});
