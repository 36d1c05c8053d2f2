import { test, expect } from './fixtures';
import { Kube } from './kube';

test('an object held by a finalizer says why, and its Events arrive live', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('detail');
  const vms = `/apis/infra.sealyun.com/v1/namespaces/${ns}/virtulmachines`;
  const vm = await kube.ok('POST', vms, {
    apiVersion: 'infra.sealyun.com/v1',
    kind: 'VirtulMachine',
    metadata: { name: 'vm1', finalizers: ['infra.sealyun.com/cleanup'] },
    spec: { cpu: '1', memory: '2G' },
  });
  await kube.ok('DELETE', `${vms}/vm1`);

  await page.goto(`/r/infra.sealyun.com/v1/virtulmachines/${ns}/vm1`);
  await expect(page.getByTestId('object-name')).toHaveText('vm1');
  await expect(page.getByTestId('deletion-notice')).toContainText('infra.sealyun.com/cleanup');
  await expect(page.getByTestId('object-yaml')).toContainText('memory: 2G');

  await kube.ok('POST', `/api/v1/namespaces/${ns}/events`, {
    metadata: { name: 'vm1.cleanup' },
    involvedObject: { apiVersion: 'infra.sealyun.com/v1', kind: 'VirtulMachine', name: 'vm1', namespace: ns, uid: vm.metadata.uid },
    reason: 'CleanupBlocked',
    message: 'external disk still attached',
    type: 'Warning',
    source: { component: 'e2e' },
  });
  await expect(page.getByText('external disk still attached')).toBeVisible();
  await page.screenshot({ path: 'test-results/detail.png', fullPage: true });

  // Released: the page follows the object away.
  await kube.ok('PATCH', `${vms}/vm1`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
  await expect(page.getByRole('alert')).toContainText('not found');
});

test('owners upward and children downward, children live', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('tree');
  const owner = await kube.ok('POST', `/apis/cnat.study.jayground8/v1alpha1/namespaces/${ns}/ats`, {
    apiVersion: 'cnat.study.jayground8/v1alpha1',
    kind: 'At',
    metadata: { name: 'parent' },
    spec: { schedule: '2030-01-01T00:00:00Z', command: 'true' },
  });
  await page.goto(`/r/cnat.study.jayground8/v1alpha1/ats/${ns}/parent`);
  await expect(page.getByTestId('no-children')).toBeVisible();

  await kube.ok('POST', `/api/v1/namespaces/${ns}/configmaps`, {
    metadata: {
      name: 'kid',
      ownerReferences: [{ apiVersion: 'cnat.study.jayground8/v1alpha1', kind: 'At', name: 'parent', uid: owner.metadata.uid, controller: true }],
    },
  });
  const child = page.locator('tr[data-child="ConfigMap/kid"]');
  await expect(child).toHaveCount(1);
  await child.getByRole('link', { name: 'kid' }).click();
  await expect(page.getByTestId('object-name')).toHaveText('kid');
  await expect(page.getByTestId('owners')).toContainText('At/parent');
  await expect(page.getByTestId('owners').getByRole('link', { name: 'At/parent' })).toHaveAttribute(
    'href',
    `/r/cnat.study.jayground8/v1alpha1/ats/${ns}/parent`,
  );
});
