// Several kinds in one live table, and "everything not Ready": a Certificate whose
// Ready condition is False and a Deployment short of its replicas are listed with
// their kinds and reasons, a ready Certificate is not, and a change of condition
// takes a row away live.
import { test, expect } from './fixtures';
import { Kube } from './kube';

const certificates = (ns: string) => `/apis/cert-manager.io/v1/namespaces/${ns}/certificates`;
const certificate = (name: string) => ({
  apiVersion: 'cert-manager.io/v1',
  kind: 'Certificate',
  metadata: { name },
  spec: { secretName: `${name}-tls`, dnsNames: [`${name}.example.com`], issuerRef: { name: 'ca', kind: 'ClusterIssuer' } },
});
const readyCondition = (status: string, reason: string) => ({
  status: { conditions: [{ type: 'Ready', status, reason, message: reason, lastTransitionTime: '2026-01-01T00:00:00Z' }] },
});
const mergePatch = { 'content-type': 'application/merge-patch+json' };

test('everything not Ready lists what is not ready across kinds, with why, live', async ({ page }) => {
  const kube = new Kube();
  const suffix = Date.now().toString(36);
  const ns = `ready-${suffix}`;
  await kube.ok('POST', '/api/v1/namespaces', { metadata: { name: ns } });
  try {
    for (const name of ['good', 'bad']) await kube.ok('POST', certificates(ns), certificate(name));
    await kube.ok('PATCH', `${certificates(ns)}/good/status`, readyCondition('True', 'Ready'), mergePatch);
    await kube.ok('PATCH', `${certificates(ns)}/bad/status`, readyCondition('False', 'DoesNotExist'), mergePatch);
    await kube.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'portico.local/nothing-here:1' }] } },
      },
    });

    // From the palette, then narrowed to the namespace.
    await page.goto('/crds');
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await page.keyboard.press('Control+k');
    await page.keyboard.type('not ready');
    await page.getByTestId('palette').getByRole('option', { name: /Everything not Ready/ }).click();
    await expect(page).toHaveURL(/\/many\?not_ready=true/);
    await expect(page.getByTestId('many-title')).toHaveText('Everything not Ready');
    await page.goto(`/many?not_ready=true&ns=${ns}`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);

    const table = page.getByTestId('many-table');
    const bad = table.locator('tr[data-kind="Certificate"][data-name="bad"]');
    await expect(bad).toContainText('Not ready');
    await expect(bad).toContainText('DoesNotExist');
    await expect(bad.getByRole('link', { name: 'bad' })).toHaveAttribute('href', new RegExp(`/r/cert-manager.io/v1/certificates/${ns}/bad$`));
    await expect(table.locator('tr[data-kind="Deployment"][data-name="web"]')).toContainText('0/1 ready');
    await expect(table.locator('tr[data-kind="Certificate"][data-name="good"]')).toHaveCount(0);
    await expect(page.getByTestId('many-kinds-status').locator('li[data-kind="Certificate"]')).toContainText('Live');

    // Live: the condition turns True and the row goes.
    await kube.ok('PATCH', `${certificates(ns)}/bad/status`, readyCondition('True', 'Ready'), mergePatch);
    await expect(bad).toHaveCount(0);

    // Any kinds, named as kubectl get takes them, every row with its kind.
    await page.goto(`/many?kinds=${encodeURIComponent('certificates.cert-manager.io,deploy')}&ns=${ns}`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.getByTestId('many-title')).toHaveText('Several kinds');
    await expect(table.locator('tr.row')).toHaveCount(3);
    await expect(table.locator('tr[data-kind="Certificate"][data-name="good"]')).toContainText('Ready');
    await expect(page.getByTestId('many-count')).toContainText('3 objects in 2 kinds');
    await page.screenshot({ path: 'test-results/many-kinds.png', fullPage: true });
  } finally {
    await kube.request('DELETE', `/api/v1/namespaces/${ns}`);
  }
});
