import { test, expect } from './fixtures';
import { Kube } from './kube';

// Needs a cluster with a real node (serve.sh starts one): its kubelet reports the Pod.
// Never ready, with the kubelet's Warning events, and no container running.
const neverReady = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'app', image: 'portico.local/absent:1', imagePullPolicy: 'Never' }],
      },
    },
  },
});

test('the home page says what is wrong, live, and each row leads to its page', async ({ page }) => {
  test.setTimeout(240_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('home');
  await page.goto(`/?ns=${ns}`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.getByTestId('home-live-status')).toHaveText('Live');
  await expect(page.getByTestId('home-workloads')).toContainText('Every Deployment, StatefulSet and DaemonSet has its replicas.');

  // Trouble arrives while the page is open: it appears without a reload.
  await expect
    .poll(async () => (await kube.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, neverReady('web'))).status, { timeout: 20_000 })
    .toBe(201);
  const workload = page.getByTestId('home-workloads').locator('li[data-kind="Deployment"]', { hasText: 'web' });
  await expect(workload).toContainText('0 of 1 ready', { timeout: 60_000 });
  await expect(page.getByTestId('home-pods').locator('li[data-kind="Pod"]', { hasText: 'web-' })).toContainText('0/1 ready');
  await expect(page.getByTestId('home-changes').locator('li[data-kind="Deployment"]', { hasText: 'web' })).toContainText('created');
  const warning = page.getByTestId('warning-group').filter({ hasText: 'ErrImageNeverPull' });
  await expect(warning).toContainText(/pod\/web-/, { timeout: 180_000 });
  await page.screenshot({ path: 'test-results/home.png', fullPage: true });

  // Each row is a link to the object's page.
  await workload.getByRole('link', { name: 'web' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/apps/v1/deployments/${ns}/web$`));
  await page.goBack();
  await warning.getByRole('link', { name: /pod\/web-/ }).click();
  await expect(page).toHaveURL(new RegExp(`/r/core/v1/pods/${ns}/web-`));
  await kube.ok('DELETE', `/apis/apps/v1/namespaces/${ns}/deployments/web`);
});
