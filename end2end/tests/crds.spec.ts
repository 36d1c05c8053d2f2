import { test, expect } from './fixtures';

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
});
