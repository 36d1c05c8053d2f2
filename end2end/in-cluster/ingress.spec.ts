// Portico as people run it: its image in the cluster (2 portal replicas, the reconciler
// with its Lease), reached through Traefik with TLS at https://portico.test, a person
// signed in with their own token. The smoke set of the browser suite, through the
// Ingress: hydration, security headers, a live table over the WebSocket, a form submit
// that provisions a MySQL to Ready on the real node.
import { test, expect } from '../tests/fixtures';
import { Kube } from '../tests/kube';
import { applyToPageMs, person, signIn, throughTheIngress } from './browser';

test.use(throughTheIngress);

// Real containers: MariaDB initialises its volume, its probe runs every 10 s.
const REAL = { timeout: 180_000 };

test('the first page comes through the Ingress over TLS, hydrates, and carries the security headers', async ({ page }) => {
  console.log(`${process.env.PORTICO_E2E_DEPLOY ?? "kustomize"} apply to the first page through the Ingress: ${applyToPageMs} ms`);
  const kube = new Kube();
  const { token } = await person(kube, 'ingress');
  const response = await page.goto('/login');
  expect(response?.status()).toBe(200);
  expect(page.url()).toBe('https://portico.test/login');
  const headers = response?.headers() ?? {};
  expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-frame-options']).toBe('DENY');
  // Plain HTTP is sent to HTTPS by the Ingress.
  const upgraded = await page.goto('http://portico.test/login');
  expect(page.url()).toBe('https://portico.test/login');
  expect(upgraded?.request().redirectedFrom()?.url()).toBe('http://portico.test/login');

  await signIn(page, token);
  await page.goto('/crds');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.locator('table')).toBeVisible();
  const session = (await page.context().cookies()).find((c) => c.name === '__Host-portico_session');
  expect(session?.secure).toBe(true);
  expect(session?.httpOnly).toBe(true);
  await page.screenshot({ path: 'test-results/in-cluster/crds.png' });
});

test('a live table follows the API server over the WebSocket through the Ingress', async ({ page }) => {
  const kube = new Kube();
  const { ns, token } = await person(kube, 'ingress-live');
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await signIn(page, token);
  await page.goto(`/r/portico.dev/v1alpha1/stacks?ns=${ns}`);
  await expect(page.getByTestId('live-status')).toHaveText('Live');
  // Namespaces cannot be listed with a team's access: the one shown is named.
  await expect(page.getByTestId('namespace-typed')).toHaveValue(ns);
  expect(sockets.some((url) => url.startsWith('wss://portico.test/'))).toBe(true);

  const row = page.locator('tr[data-name="web"]');
  await kube.ok('POST', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`, {
    apiVersion: 'portico.dev/v1alpha1',
    kind: 'Stack',
    metadata: { name: 'web' },
    spec: { choice: 'tomcat' },
  });
  await expect(row).toHaveCount(1);
  // The reconciler in the cluster provisions it; the row follows its status.
  await expect(row).toContainText('Ready', REAL);
  await page.screenshot({ path: 'test-results/in-cluster/live-table.png', fullPage: true });
});

test('a MySQL provisioned from the form through the Ingress turns Ready on the real node', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const { ns, token } = await person(kube, 'ingress-prov');
  await signIn(page, token);
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.locator('.offer[data-choice="mysql"]').getByRole('link', { name: 'Provision MySQL (MariaDB)' }).click();
  await page.locator('#f-metadata-name').fill('shop-db');
  // A person with access to their namespace only may not list namespaces: they type it.
  await expect(page.getByTestId('namespace-typed')).toBeVisible();
  await page.locator('#f-metadata-namespace').fill(ns);
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/shop-db$`));
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  await expect(page.getByTestId('conditions')).toContainText('AllReplicasReady');
  // The page opened before the container started: its log is followed once it does.
  await expect(page.getByTestId('log-lines')).toContainText('ready for connections', REAL);
  await expect(page.getByTestId('log-ended')).toHaveCount(0);
  await page.screenshot({ path: 'test-results/in-cluster/stack-ready.png', fullPage: true });
});
