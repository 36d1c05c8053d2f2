import { test, expect } from './fixtures';
import { Kube } from './kube';

const seedKinds = ['CrdKind', 'At', 'Website', 'HelloApp', 'VirtulMachine'];

test('the CRD page lists every seed CRD and filters in the browser', async ({ page }) => {
  await page.goto('/crds');
  const table = page.getByTestId('crd-table');
  for (const kind of seedKinds) {
    await expect(table.locator('.kind-name').getByText(kind, { exact: true })).toHaveCount(1);
  }
  await expect(table.locator('tr[data-crd="crdplural.iksoon.test.com"]')).toContainText('crdshort, iksoontest');

  // The filter only works once the wasm bundle has hydrated the page.
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.screenshot({ path: 'test-results/crds.png', fullPage: true });
  const total = await table.locator('tbody tr').count();
  await page.getByLabel('Filter resource types').fill('sealyun');
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(table.locator('tbody tr')).toContainText('VirtulMachine');
  await expect(page.getByTestId('crd-count')).toHaveText(`1 of ${total} resource types`);

  await page.getByLabel('Filter resource types').fill('no-such-kind');
  await expect(table.locator('tbody tr')).toHaveCount(0);
  await expect(page.getByText('No resource type matches the filter.')).toBeVisible();

  // A row's kind leads to its objects.
  await page.getByLabel('Filter resource types').fill('');
  await table.locator('tr[data-crd="crdplural.iksoon.test.com"]').getByRole('link', { name: 'CrdKind' }).click();
  await expect(page).toHaveURL(/\/r\/iksoon\.test\.com\/v1\/crdplural$/);
});

test('Enter in "Find a kind" opens the first kind it lists', async ({ page }) => {
  await page.goto('/crds');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const find = page.getByLabel('Find a kind');
  await find.fill('crdkind');
  await expect(page.locator('.sidebar .nav-item')).toHaveText(['CrdKind']);
  await find.press('Enter');
  await expect(page).toHaveURL(/\/r\/iksoon\.test\.com\/v1\/crdplural$/);
});

test('a CRD too deep to read is listed with the reason, and the rest of the page works', async ({ page }) => {
  const kube = new Kube();
  // 70 levels of `properties`: deeper than the server's JSON decoder reads.
  let schema: any = { type: 'string' };
  for (let i = 0; i < 70; i++) schema = { type: 'object', properties: { next: schema } };
  const name = 'abysses.deep.e2e.test';
  await kube.ok('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: 'deep.e2e.test', scope: 'Namespaced',
      names: { plural: 'abysses', kind: 'Abyss' },
      versions: [{ name: 'v1', served: true, storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: schema } } } }],
    },
  });
  try {
    await page.goto('/crds');
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    const row = page.locator(`tr[data-crd="${name}"]`);
    await expect(row.getByTestId('crd-problem')).toContainText('could not read this definition');
    await page.getByLabel('Filter resource types').fill('abyss');
    await expect(page.getByTestId('crd-table').locator('tbody tr')).toHaveCount(1);
    await page.screenshot({ path: 'test-results/crd-problem.png' });
  } finally {
    await kube.ok('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
  }
});
