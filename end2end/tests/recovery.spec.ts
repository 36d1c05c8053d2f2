import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kube } from './kube';

const pidFile = join(__dirname, '..', '.state', 'control-plane.pid');

test('a table open while kube-apiserver restarts recovers by itself', async ({ page }) => {
  test.skip(!!process.env.KUBECONFIG, 'needs the local control plane');
  const kube = new Kube();
  const ns = await kube.freshNamespace('restart');
  const cms = `/api/v1/namespaces/${ns}/configmaps`;
  await kube.ok('POST', cms, { metadata: { name: 'before' } });
  await page.goto(`/r/core/v1/configmaps?ns=${ns}`);
  await expect(page.locator('tr[data-name="before"]')).toHaveCount(1);

  process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGUSR1');
  // Writes fail while it is down; the first one that succeeds proves it is back.
  await expect
    .poll(async () => (await kube.request('POST', cms, { metadata: { name: 'after' } })).status, { timeout: 60_000 })
    .toBe(201);

  await expect(page.locator('tr[data-name="after"]')).toHaveCount(1, { timeout: 30_000 });
  const listed = (await kube.ok('GET', cms)).items.map((i: any) => i.metadata.name).sort();
  const shown = await page.locator('[data-testid="live-table"] tbody tr').evaluateAll((rows) =>
    rows.map((r) => r.getAttribute('data-name')).sort(),
  );
  expect(shown).toEqual(listed);
});

test('the navigation picks up a new CRD without a reload', async ({ page }) => {
  const kube = new Kube();
  await page.goto('/crds');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const suffix = Date.now().toString(36);
  const group = `e2e${suffix}.example.com`;
  await kube.ok('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    metadata: { name: `gadgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  await expect(page.locator('.sidebar').getByRole('link', { name: 'Gadget' })).toBeVisible({ timeout: 5000 });
  await kube.ok('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${group}`);
  await expect(page.locator('.sidebar').getByRole('link', { name: 'Gadget' })).toHaveCount(0, { timeout: 5000 });
});
