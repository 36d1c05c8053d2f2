import { test, expect } from '@playwright/test';
import { Kube } from './kube';

const field = (page: any, path: string) => page.locator(`.field[data-path="${path}"]`);

test('CrdKind form: the pattern and bounds are enforced as you type, nothing is created until valid', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('form');
  await page.goto(`/r/iksoon.test.com/v1/crdplural/new?ns=${ns}`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.locator('#f-metadata-name').fill('web-1');
  await page.locator('#f-spec-choice').fill('postgres');
  await page.locator('#f-spec-replicas').fill('11');
  await expect(field(page, 'spec.choice').locator('.field-error')).toContainText('(mysql|tomcat)');
  await expect(field(page, 'spec.replicas').locator('.field-error')).toHaveText('Must be at most 10.');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByTestId('form-banner')).toContainText('Fix the fields');
  const list = await kube.ok('GET', `/apis/iksoon.test.com/v1/namespaces/${ns}/crdplural`);
  expect(list.items).toHaveLength(0);
  await page.screenshot({ path: 'test-results/form-errors.png', fullPage: true });

  await page.locator('#f-spec-choice').fill('mysql');
  await page.locator('#f-spec-replicas').fill('2');
  await expect(page.locator('.field-error')).toHaveCount(0);
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/iksoon.test.com/v1/crdplural/${ns}/web-1$`));
  await expect(page.getByTestId('object-name')).toHaveText('web-1');
  const created = await kube.ok('GET', `/apis/iksoon.test.com/v1/namespaces/${ns}/crdplural/web-1`);
  expect(created.spec).toEqual({ choice: 'mysql', replicas: 2 });

  await page.goto(`/r/iksoon.test.com/v1/crdplural?ns=${ns}`);
  await expect(page.locator('tr[data-name="web-1"]')).toHaveCount(1);
});

test('a CEL rule only the API server checks is reported on its field by the dry run', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('cel');
  await page.goto(`/r/portico.dev/v1alpha1/stacks/new?ns=${ns}`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.locator('#f-metadata-name').fill('tc');
  // Defaults are pre-filled: replicas 1, exposure NodePort.
  await expect(page.locator('#f-spec-replicas')).toHaveValue('1');
  await page.locator('#f-spec-choice').selectOption({ label: 'tomcat' });
  await page.locator('#f-spec-storage').fill('1Gi');
  await expect(field(page, 'spec.storage').locator('.field-error')).toContainText('storage applies to mysql only');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByTestId('form-banner')).toBeVisible();
  const list = await kube.ok('GET', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`);
  expect(list.items).toHaveLength(0);
});
