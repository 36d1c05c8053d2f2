import { test, expect } from './fixtures';
import { Kube, holdNodesTo } from './kube';

// Needs a cluster whose node runs containers (serve.sh starts one with a real node).
const image = 'portico.local/mariadb:10.11';

/** A Pod whose `app` container writes a numbered line a second, and a quiet sidecar. */
const writer = (name: string) => ({
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: 'app',
        image,
        imagePullPolicy: 'Never',
        command: [
          'sh',
          '-c',
          'i=0; while true; do echo "line $i: GET /api/orders/$((i * 7 % 100)) 200 in $((i % 13 + 2))ms"; i=$((i+1)); sleep 1; done',
        ],
      },
      {
        name: 'sidecar', image, imagePullPolicy: 'Never', command: ['sh', '-c', 'echo "sidecar ready"; sleep 3600'],
        resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
      },
    ],
  },
});

async function untilRunning(kube: Kube, path: string) {
  await expect
    .poll(
      async () => {
        const pod = (await kube.request('GET', path)).body;
        return (pod.status?.containerStatuses ?? []).filter((c: any) => c.state?.running).length;
      },
      { timeout: 120_000 },
    )
    .toBe(2);
}

/** The numbers of the `line N` lines the log view shows. */
async function shownNumbers(page: import('@playwright/test').Page): Promise<number[]> {
  const texts = await page.getByTestId('log-line').allTextContents();
  return texts.map((t) => /^line (\d+):/.exec(t)).flatMap((m) => (m ? [Number(m[1])] : []));
}

test('a Pod page follows its container log live', async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('logs');
  const pods = `/api/v1/namespaces/${ns}/pods`;
  // A fresh namespace's default ServiceAccount, which admission wants, comes shortly.
  await expect.poll(async () => (await kube.request('POST', pods, writer('writer'))).status, { timeout: 20_000 }).toBe(201);
  await untilRunning(kube, `${pods}/writer`);

  await page.goto(`/r/core/v1/pods/${ns}/writer`);
  await expect(page.getByTestId('object-name')).toHaveText('writer');
  // What `kubectl describe pod` opens with: phase, node, address, each container.
  const running = await kube.ok('GET', `${pods}/writer`);
  const summary = page.getByTestId('pod-summary');
  await expect(page.getByTestId('pod-phase')).toHaveText('Running');
  await expect(page.getByTestId('pod-node')).toHaveText(running.spec.nodeName);
  await expect(page.getByTestId('pod-ip')).toHaveText(running.status.podIP);
  await expect(summary.locator('tr[data-container="app"] td')).toHaveText(['app', image, 'Running', 'yes', '0', 'none', 'none']);
  await expect(summary.locator('tr[data-container="sidecar"] td')).toHaveText(
    ['sidecar', image, 'Running', 'yes', '0', 'cpu 10m · memory 16Mi', 'memory 64Mi']);
  await page.screenshot({ path: 'test-results/pod-summary.png', fullPage: true });
  const logs = page.getByTestId('pod-logs');
  await expect(logs.getByTestId('log-live-status')).toHaveText('Live');
  await expect(logs.locator('.log-tab.active')).toHaveText('app');
  await expect(page.getByTestId('log-line').first()).toContainText('line ');
  const opened = Math.max(...(await shownNumbers(page)));

  // Lines written after the page opened arrive without a reload.
  await expect(page.getByTestId('log-line').filter({ hasText: `line ${opened + 2}:` })).toHaveCount(1, {
    timeout: 10_000,
  });

  // Search narrows the shown lines and marks what matched.
  await page.getByTestId('log-search').fill(`line ${opened}:`);
  await expect(page.getByTestId('log-line')).toHaveCount(1);
  await expect(page.getByTestId('log-line').locator('mark')).toHaveText(`line ${opened}:`);
  await page.getByTestId('log-search').fill('');

  // Download: the shown lines, named after the Pod and container.
  const download = page.waitForEvent('download');
  await page.getByTestId('log-download').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe('writer-app.log');

  // Another container; and a previous run that does not exist, said plainly.
  await logs.getByRole('tab', { name: 'sidecar' }).click();
  await expect(page.getByTestId('log-line')).toHaveText(['sidecar ready']);
  await page.getByTestId('log-previous').check();
  await expect(page.getByTestId('log-ended')).toContainText('no previous run');
  await expect(logs.getByTestId('log-live-status')).toHaveText('Ended');
  await page.getByTestId('log-previous').uncheck();
  await logs.getByRole('tab', { name: 'app' }).click();
  await expect(logs.getByTestId('log-live-status')).toHaveText('Live');
  await expect(page.getByTestId('log-line').last()).toContainText('line ');
  // Enough lines for the picture in docs/ (docs/logs-screenshot.png is this one).
  await expect.poll(async () => (await shownNumbers(page)).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(14);
  await page.screenshot({ path: 'test-results/logs.png', fullPage: false });
});

test("a Stack's page shows the logs of its Pods", async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('stack-logs');
  // More CPU than the node has (held to 2 CPUs, whatever the machine has): the
  // reconciler's own Pod stays Pending (no container). The writer requests none.
  const release = await holdNodesTo(kube, ns, 2);
  try {
    const stack = await kube.ok('POST', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`, {
      apiVersion: 'portico.dev/v1alpha1', kind: 'Stack',
      metadata: { name: 'shop' },
      spec: { choice: 'mysql', resources: { requests: { cpu: '3' } } },
    });
    const pods = `/api/v1/namespaces/${ns}/pods`;
    const owned = writer('shop-writer') as any;
    owned.metadata.ownerReferences = [
      { apiVersion: 'portico.dev/v1alpha1', kind: 'Stack', name: 'shop', uid: stack.metadata.uid },
    ];
    await expect.poll(async () => (await kube.request('POST', pods, owned)).status, { timeout: 20_000 }).toBe(201);
    await untilRunning(kube, `${pods}/shop-writer`);

    await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/shop`);
    // The object page comes in a part of its own: clicks count once it is hydrated.
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    const logs = page.getByTestId('stack-logs');
    await logs.locator('.pod-tabs').getByRole('tab', { name: 'shop-writer' }).click();
    await expect(logs.locator('.pod-tabs .log-tab.active')).toHaveText('shop-writer');
    await expect(logs.getByTestId('log-line').last()).toContainText('line ', { timeout: 10_000 });
    // The newest line shown, read in one go (the view may still be replacing its lines).
    let opened = -1;
    await expect
      .poll(async () => {
        const shown = await shownNumbers(page);
        opened = shown.length > 0 ? Math.max(...shown) : -1;
        return opened;
      }, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(0);
    await expect(logs.getByTestId('log-line').filter({ hasText: `line ${opened + 2}:` })).toHaveCount(1, {
      timeout: 10_000,
    });
  } finally {
    await release();
  }
});

test("a Deployment's page shows every Pod's log merged, each tagged, and follows a new Pod", async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('workload-logs');
  const template = writer('unused') as any;
  const deployment = {
    metadata: { name: 'orders' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'orders' } },
      template: { metadata: { labels: { app: 'orders' } }, spec: { ...template.spec, containers: [template.spec.containers[0]] } },
    },
  };
  const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;
  await expect.poll(async () => (await kube.request('POST', deployments, deployment)).status, { timeout: 20_000 }).toBe(201);

  await page.goto(`/r/apps/v1/deployments/${ns}/orders`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const logs = page.getByTestId('workload-logs');
  await expect(logs.getByTestId('log-live-status')).toHaveText('Live');
  // Both Pods' lines, each tagged with its Pod and container.
  const podsWriting = async () => {
    const tagged = await logs.locator('.log-line.tagged:not(.log-note)').evaluateAll(
      (rows) => rows.map((r) => r.getAttribute('data-pod')));
    return new Set(tagged).size;
  };
  await expect.poll(podsWriting, { timeout: 120_000 }).toBe(2);
  await expect(logs.locator('.log-tag').filter({ hasText: '/app' }).first()).toBeVisible();
  await page.screenshot({ path: 'test-results/workload-logs.png', fullPage: false });

  // A third Pod is followed once it starts.
  await kube.ok('PATCH', `${deployments}/orders`, { spec: { replicas: 3 } }, { 'content-type': 'application/merge-patch+json' });
  await expect.poll(podsWriting, { timeout: 120_000 }).toBe(3);

  // Filtered by a regular expression; a broken one says so.
  await logs.getByTestId('log-pattern').check();
  await logs.getByTestId('log-search').fill('line \\d*7:');
  await expect.poll(async () => {
    const texts = await logs.locator('.log-line.tagged:not(.log-note)').allTextContents();
    return texts.length > 0 && texts.every((t) => /line \d*7:/.test(t));
  }, { timeout: 20_000 }).toBe(true);
  await logs.getByTestId('log-search').fill('line (');
  await expect(logs.getByTestId('log-pattern-error')).toContainText('Not a regular expression');
  await logs.getByTestId('log-search').fill('');

  // Paused, the lines shown stay while new ones are kept; resumed, they show.
  await logs.getByTestId('log-pause').click();
  const shownWhilePaused = await logs.getByTestId('log-line').count();
  await expect(logs.getByTestId('log-paused')).toContainText('new lines kept');
  await expect.poll(async () => Number((await logs.getByTestId('log-paused').textContent())?.match(/(\d+) new/)?.[1] ?? 0),
    { timeout: 20_000 }).toBeGreaterThan(0);
  expect(await logs.getByTestId('log-line').count()).toBe(shownWhilePaused);
  await logs.getByTestId('log-pause').click();
  await expect.poll(async () => logs.getByTestId('log-line').count()).toBeGreaterThan(shownWhilePaused);
});
