import { test, expect } from './fixtures';
import { Kube } from './kube';

const merge = { 'content-type': 'application/merge-patch+json' };

test('provision a MySQL from the catalog and watch its page reach Ready', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('prov');
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.locator('.offer')).toHaveCount(2);
  await expect(page.locator('.offer[data-choice="mysql"]')).toContainText('docker.io/library/mysql:8.4');
  await page.screenshot({ path: 'test-results/provision.png' });
  await page.locator('.offer[data-choice="mysql"]').getByRole('link').click();

  await expect(page).toHaveURL(/\/r\/portico.dev\/v1alpha1\/stacks\/new/);
  await expect(page.locator('#f-spec-choice')).toHaveValue('"mysql"');
  await page.locator('#f-metadata-name').fill('shop-db');
  await page.locator('#f-metadata-namespace').selectOption(ns);
  await page.locator('#f-spec-storage').fill('2Gi');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/shop-db$`));

  // The reconciler creates the children; the page lists them live.
  const children = page.locator('[data-testid="children"]');
  await expect(children.locator('tr[data-child="StatefulSet/shop-db"]')).toBeVisible();
  await expect(page.getByTestId('stack-phase')).toHaveText('Progressing');

  // No controller-manager here: play the StatefulSet controller's part.
  const sts = `/apis/apps/v1/namespaces/${ns}/statefulsets/shop-db`;
  const current = await kube.ok('GET', sts);
  await kube.ok('PATCH', `${sts}/status`, {
    status: { replicas: 1, readyReplicas: 1, updatedReplicas: 1, availableReplicas: 1, observedGeneration: current.metadata.generation },
  }, merge);
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready');
  await expect(page.getByTestId('conditions')).toContainText('AllReplicasReady');
  await expect(page.getByTestId('stack-connection')).toContainText(`shop-db.${ns}.svc.cluster.local`);

  // The password only on request, never in the page as served.
  const secret = await kube.ok('GET', `/api/v1/namespaces/${ns}/secrets/shop-db-credentials`);
  const password = Buffer.from(secret.data.password, 'base64').toString();
  expect(await page.content()).not.toContain(password);
  await page.getByTestId('reveal-password').click();
  await expect(page.getByTestId('password')).toHaveText(password);
  await page.screenshot({ path: 'test-results/stack-ready.png', fullPage: true });
});
