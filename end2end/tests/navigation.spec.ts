import { test, expect } from './fixtures';
import { Kube } from './kube';

test('the navigation and the CRD page pick up a new CRD without a reload', async ({ page }) => {
  const kube = new Kube();
  await page.goto('/crds');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const suffix = Date.now().toString(36);
  const group = `e2e${suffix}.example.com`;
  // The page's filter holds through the new list.
  await page.getByLabel('Filter resource types').fill(suffix);
  await expect(page.getByTestId('crd-table').locator('tbody tr')).toHaveCount(0);
  await kube.ok('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    metadata: { name: `gadgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  await expect(page.locator('.sidebar').getByRole('link', { name: 'Gadget' })).toBeVisible();
  await expect(page.getByTestId('crd-table').locator('tbody tr')).toHaveCount(1);
  await expect(page.locator(`tr[data-crd="gadgets.${group}"]`)).toContainText('Gadget');
  await kube.ok('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${group}`);
  await expect(page.locator('.sidebar').getByRole('link', { name: 'Gadget' })).toHaveCount(0);
  await expect(page.locator(`tr[data-crd="gadgets.${group}"]`)).toHaveCount(0);
});
