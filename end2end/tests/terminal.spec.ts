import { test, expect } from './fixtures';
import { Kube } from './kube';

// Needs a cluster whose node runs containers (serve.sh starts one with a real node).
const image = 'portico.local/mariadb:10.11';

const sleeper = (name: string) => ({
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
  },
});

test('a terminal into a Pod runs what is typed, says the exit code, and loads xterm.js only when opened', async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('term');
  const pods = `/api/v1/namespaces/${ns}/pods`;
  await expect.poll(async () => (await kube.request('POST', pods, sleeper('shell'))).status, { timeout: 20_000 }).toBe(201);
  await expect
    .poll(async () => (await kube.ok('GET', `${pods}/shell`)).status?.containerStatuses?.[0]?.state?.running !== undefined,
      { timeout: 120_000 })
    .toBe(true);

  const xterm: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes('/xterm/')) xterm.push(request.url());
  });
  await page.goto(`/r/core/v1/pods/${ns}/shell`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.getByTestId('terminal')).toBeHidden();
  expect(xterm, 'no terminal, no xterm.js').toEqual([]);

  await page.getByTestId('terminal-open').click();
  const dock = page.getByTestId('terminal');
  await expect(dock).toBeVisible();
  await expect(page.getByTestId('terminal-status')).toContainText('Running in container app, as you.');
  await expect(page.getByTestId('terminal-container')).toHaveValue('app');
  expect(xterm.some((url) => url.endsWith('/xterm/xterm.mjs'))).toBe(true);
  const screen = page.getByTestId('terminal-screen');
  await screen.click();
  await page.keyboard.type('echo $((6*7))');
  await page.keyboard.press('Enter');
  const rows = screen.locator('.xterm-rows');
  // The answer on a row of its own (the typed line shows `$((6*7))`).
  await expect(rows.locator('div', { hasText: /^42\s*$/ })).toHaveCount(1);
  await page.screenshot({ path: 'test-results/terminal.png' });

  // The exit code, said in words and kept on the screen with what was shown.
  await page.keyboard.type('exit 3');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('terminal-status')).toHaveText('The command ended with exit code 3.');
  await expect(screen).toHaveAttribute('data-exit-code', '3');
  await expect(rows).toContainText('42');

  // Another command: typed, split as a shell would.
  await page.getByTestId('terminal-command').selectOption('other');
  await page.getByTestId('terminal-typed').fill(`sh -c 'echo "two words"; exit 0'`);
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByTestId('terminal-status')).toHaveText('The command ended with exit code 0.');
  await expect(screen.locator('.xterm-rows')).toContainText('two words');

  // Closed, the dock goes; the page is as it was.
  await page.getByTestId('terminal-close').click();
  await expect(dock).toBeHidden();
});

test("a workload's page opens a terminal into each of its Pods from its children", async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('term-deploy');
  const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;
  const deployment = {
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: sleeper('web').spec },
    },
  };
  await expect.poll(async () => (await kube.request('POST', deployments, deployment)).status, { timeout: 20_000 }).toBe(201);
  await expect
    .poll(async () => (await kube.ok('GET', `${deployments}/web`)).status?.readyReplicas ?? 0, { timeout: 120_000 })
    .toBe(1);

  await page.goto(`/r/apps/v1/deployments/${ns}/web`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const podRow = page.getByTestId('children').locator('tr[data-child^="Pod/web-"]');
  await expect(podRow).toHaveCount(1);
  const podName = (await podRow.getAttribute('data-child'))?.replace('Pod/', '') ?? '';
  await podRow.getByTestId('terminal-open').click();
  await expect(page.getByTestId('terminal-status')).toContainText('Running in container app, as you.');
  await expect(page.getByTestId('terminal')).toContainText(podName);
  await page.getByTestId('terminal-screen').click();
  await page.keyboard.type('hostname');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('terminal-screen').locator('.xterm-rows div', { hasText: new RegExp(`^${podName}\\s*$`) }))
    .toHaveCount(1);
  await page.screenshot({ path: 'test-results/workload-terminal.png' });
});
