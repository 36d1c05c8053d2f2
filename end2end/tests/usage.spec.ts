import { test, expect } from './fixtures';
import { Kube } from './kube';

// Needs a cluster whose node runs containers and metrics-server (serve.sh starts one
// with a real node): a Pod that burns a core shows about 1,000m on its page, beside
// its request and limit, with the last minutes drawn; in its namespace's Pod table
// (kubectl top pod's columns after kubectl get's); and on its node's page.
const image = 'portico.local/mariadb:10.11';

const burner = {
  metadata: { name: 'burn', labels: { app: 'burn' } },
  spec: {
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [{
      name: 'app', image, imagePullPolicy: 'Never', command: ['timeout', '600', 'sh', '-c', 'while :; do :; done'],
      resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '1500m', memory: '64Mi' } },
    }],
  },
};

const millicores = (text: string) => Number(text.match(/^(\d+)m/)?.[1] ?? -1);

test('a Pod that burns a core shows about 1000m on its page, in its table and on its node', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('usage');
  const pods = `/api/v1/namespaces/${ns}/pods`;
  await expect.poll(async () => (await kube.request('POST', pods, burner)).status, { timeout: 20_000 }).toBe(201);
  await expect
    .poll(async () => (await kube.ok('GET', `${pods}/burn`)).status?.containerStatuses?.[0]?.state?.running !== undefined,
      { timeout: 120_000 })
    .toBe(true);

  await page.goto(`/r/core/v1/pods/${ns}/burn`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const row = page.getByTestId('usage-panel').locator('tr[data-usage-row="app"]');
  // metrics-server measures every 15 s; the page asks again as often.
  await expect
    .poll(async () => millicores((await row.getByTestId('usage-used').first().textContent({ timeout: 1_000 }).catch(() => '')) ?? ''),
      { timeout: 120_000, intervals: [2_000] })
    .toBeGreaterThanOrEqual(700);
  await expect(row.getByTestId('usage-bounds')).toHaveText(['request 100m · limit 1500m', 'request 16Mi · limit 64Mi']);
  await expect(row.getByTestId('usage-used').first()).toContainText('%)');
  // Two measurements kept, drawn as a line (the page keeps them while open).
  await expect(row.locator('svg.sparkline').first()).toHaveAttribute('aria-label', /^[2-9]\d* samples$|^\d{2,} samples$/,
    { timeout: 60_000 });
  await page.screenshot({ path: 'test-results/usage-pod.png', fullPage: true });

  // The Pod table: kubectl top pod's figures after kubectl get's columns.
  await page.goto(`/r/core/v1/pods?ns=${ns}`);
  const table = page.getByTestId('live-table');
  await expect(table.locator('th[data-extra]')).toHaveText(['CPU(cores)', 'MEMORY(bytes)'], { timeout: 30_000 });
  const cells = table.locator('tr[data-name="burn"] td[data-extra]');
  await expect.poll(async () => millicores(await cells.first().textContent() ?? '')).toBeGreaterThanOrEqual(700);
  await expect(cells.nth(1)).toHaveText(/^\d+Mi$/);
  await page.screenshot({ path: 'test-results/usage-table.png' });

  // The node it runs on carries the core, beside what it can allocate.
  const node = (await kube.ok('GET', `${pods}/burn`)).spec.nodeName;
  await page.goto(`/r/core/v1/nodes/_/${node}`);
  const nodeRow = page.getByTestId('usage-panel').locator(`tr[data-usage-row="${node}"]`);
  await expect
    .poll(async () => millicores((await nodeRow.getByTestId('usage-used').first().textContent({ timeout: 1_000 }).catch(() => '')) ?? ''),
      { timeout: 60_000, intervals: [2_000] })
    .toBeGreaterThanOrEqual(700);
  await expect(nodeRow.getByTestId('usage-bounds').first()).toHaveText(/^allocatable \d+m$/);
  await page.screenshot({ path: 'test-results/usage-node.png' });
  // The core back to the node before the next spec.
  await kube.request('DELETE', `${pods}/burn?gracePeriodSeconds=0`);
  await kube.request('DELETE', `/api/v1/namespaces/${ns}`);
});
