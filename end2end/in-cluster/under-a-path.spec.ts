// The base-path variant through the Ingress: the deployment switched to serving under
// /portico (PORTICO_BASE_PATH and the Ingress path, as deploy/overlays/example and the
// chart's portal.basePath do), rolled out, used, and switched back. Runs last (by name),
// and leaves the deployment as it found it.
import type { Page } from '@playwright/test';
import { test, expect } from '../tests/fixtures';
import { Kube } from '../tests/kube';
import { person, throughTheIngress } from './browser';

test.use(throughTheIngress);

const deployment = '/apis/apps/v1/namespaces/portico/deployments/portico';
const ingress = '/apis/networking.k8s.io/v1/namespaces/portico/ingresses/portico';

/** Serves the portal under `path` ('' for the root) and waits for the rollout. */
async function serveUnder(kube: Kube, path: string): Promise<void> {
  const env = path ? [{ name: 'PORTICO_BASE_PATH', value: path }] : [{ name: 'PORTICO_BASE_PATH', $patch: 'delete' }];
  await kube.ok(
    'PATCH',
    deployment,
    { spec: { template: { spec: { containers: [{ name: 'portico', env }] } } } },
    { 'content-type': 'application/strategic-merge-patch+json' },
  );
  await kube.ok('PATCH', ingress, [{ op: 'replace', path: '/spec/rules/0/http/paths/0/path', value: path || '/' }], {
    'content-type': 'application/json-patch+json',
  });
  // Rolled out, and the old Pods gone: a stopping Pod serves for its last 5 s, and a
  // request it answers from the old path would be sent to the root.
  await expect
    .poll(
      async () => {
        const d = await kube.ok('GET', deployment);
        const s = d.status;
        const pods = (
          await kube.ok('GET', '/api/v1/namespaces/portico/pods?labelSelector=app.kubernetes.io/component%3Dserver')
        ).items;
        return (
          s.observedGeneration === d.metadata.generation &&
          s.updatedReplicas === 2 &&
          s.readyReplicas === 2 &&
          pods.length === 2
        );
      },
      { timeout: 120_000, intervals: [500] },
    )
    .toBe(true);
}

async function signInUnder(page: Page, path: string, token: string): Promise<void> {
  await page.goto(`${path}/login`);
  await page.locator('#token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).not.toHaveURL(/\/login/);
}

test('served under /portico through the Ingress: pages, assets and the live socket all under the path', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const { ns, token } = await person(kube, 'subpath');
  await serveUnder(kube, '/portico');
  try {
    const assets: string[] = [];
    const sockets: string[] = [];
    page.on('request', (r) => r.resourceType() === 'script' && assets.push(r.url()));
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await signInUnder(page, '/portico', token);
    await page.goto(`/portico/r/portico.dev/v1alpha1/stacks?ns=${ns}`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(page.getByTestId('live-status')).toHaveText('Live');
    expect(assets.length).toBeGreaterThan(0);
    expect(assets.every((url) => url.startsWith('https://portico.test/portico/'))).toBe(true);
    expect(sockets.some((url) => url.startsWith('wss://portico.test/portico/'))).toBe(true);
    // Links stay under the path.
    await page.getByRole('link', { name: 'Provision' }).click();
    await expect(page).toHaveURL('https://portico.test/portico/provision');
    await page.screenshot({ path: 'test-results/in-cluster/under-a-path.png' });
    // Nothing is served at the root any more: the Ingress routes only the path.
    const root = await page.goto('/login');
    expect(root?.status()).toBe(404);
  } finally {
    await serveUnder(kube, '');
  }
});
