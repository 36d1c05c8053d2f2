// A rolling restart of the portal with tabs open, through the Ingress: `kubectl rollout
// restart` replaces both Pods one by one (maxUnavailable 0); every tab's WebSocket is
// cut when its Pod stops, reconnects to a new Pod through Traefik, and its views come
// back Live with what changed meanwhile; a fourth tab, a form being filled in, keeps
// its text and submits to the new Pods.
import type { Page } from '@playwright/test';
import { test, expect } from '../tests/fixtures';
import { Kube } from '../tests/kube';
import { person, signIn, throughTheIngress } from './browser';

test.use(throughTheIngress);

const deployment = '/apis/apps/v1/namespaces/portico/deployments/portico';
const stacks = (ns: string) => `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`;

/** Records each change of the page's live badge with the time it happened. */
async function badgeLog(page: Page): Promise<Array<{ at: number; text: string }>> {
  const log: Array<{ at: number; text: string }> = [];
  await page.exposeFunction('badgeChanged', (text: string) => log.push({ at: Date.now(), text }));
  await page.evaluate(() => {
    const badge = document.querySelector('[data-testid="live-status"]');
    if (!badge) throw new Error('no live badge');
    new MutationObserver(() => (window as any).badgeChanged(badge.textContent ?? '')).observe(badge, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  return log;
}

test('three tabs through a rolling restart: each is Live again, sees what changed, keeps what was typed', async ({ context }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const { ns, token } = await person(kube, 'restart');
  // The two portal Pods, and no other: one an earlier spec evicted or replaced may
  // still be stopping, whichever ran before this one.
  let before: string[] = [];
  await expect
    .poll(
      async () => {
        before = (
          await kube.ok('GET', '/api/v1/namespaces/portico/pods?labelSelector=app.kubernetes.io/component%3Dserver')
        ).items.map((p: any) => p.metadata.name);
        return before.length;
      },
      { timeout: 120_000 },
    )
    .toBe(2);

  const first = await context.newPage();
  await signIn(first, token);
  const tables = [first, await context.newPage(), await context.newPage()];
  // What each tab sends on its sockets: a subscription made again after the restart
  // says where the last one left off (`resume`), rather than the page loading again.
  const sent: string[][] = tables.map(() => []);
  for (const [i, page] of tables.entries()) {
    page.on('websocket', (ws) => ws.on('framesent', (frame) => sent[i].push(String(frame.payload))));
    await page.goto(`/r/portico.dev/v1alpha1/stacks?ns=${ns}`);
    await expect(page.getByTestId('live-status')).toHaveText('Live');
    await page.evaluate(() => { (window as any).__sameDocument = true; });
  }
  const logs = await Promise.all(tables.map(badgeLog));
  const form = await context.newPage();
  await form.goto(`/r/portico.dev/v1alpha1/stacks/new?ns=${ns}`);
  await expect(form.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await form.locator('#f-metadata-name').fill('typed-before');
  await form.locator('#f-spec-choice').selectOption('"tomcat"');

  // What `kubectl rollout restart deployment/portico` does.
  const restartedAt = Date.now();
  await kube.ok(
    'PATCH',
    deployment,
    { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } },
    { 'content-type': 'application/strategic-merge-patch+json' },
  );
  await kube.ok('POST', stacks(ns), {
    apiVersion: 'portico.dev/v1alpha1',
    kind: 'Stack',
    metadata: { name: 'meanwhile' },
    spec: { choice: 'tomcat' },
  });
  // Both old Pods gone, two new ones ready.
  await expect
    .poll(
      async () => {
        const pods = (
          await kube.ok('GET', '/api/v1/namespaces/portico/pods?labelSelector=app.kubernetes.io/component%3Dserver')
        ).items;
        const ready = pods.filter(
          (p: any) =>
            !before.includes(p.metadata.name) &&
            !p.metadata.deletionTimestamp &&
            p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'),
        );
        return { old: pods.filter((p: any) => before.includes(p.metadata.name)).length, ready: ready.length };
      },
      { timeout: 180_000, intervals: [500] },
    )
    .toEqual({ old: 0, ready: 2 });
  const rolledOutMs = Date.now() - restartedAt;

  for (const [i, page] of tables.entries()) {
    await expect(page.getByTestId('live-status')).toHaveText('Live', { timeout: 30_000 });
    await expect(page.locator('tr[data-name="meanwhile"]')).toHaveCount(1);
    const log = logs[i];
    const lost = log.find((e) => e.text !== 'Live');
    const back = [...log].reverse().find((e) => e.text === 'Live');
    expect(lost, `tab ${i + 1} lost its socket when its Pod stopped`).toBeDefined();
    expect(await page.evaluate(() => (window as any).__sameDocument), `tab ${i + 1} was not reloaded`).toBe(true);
    expect(sent[i].filter((m) => m.includes('"op":"subscribe"') && m.includes('"resume"')).length,
      `tab ${i + 1} resumed its table where it left off`).toBeGreaterThan(0);
    console.log(
      `tab ${i + 1}: not Live for ${back && lost ? back.at - lost.at : '?'} ms ` +
        `(from ${lost ? lost.at - restartedAt : '?'} ms after the restart); rollout took ${rolledOutMs} ms`,
    );
  }
  await tables[0].screenshot({ path: 'test-results/in-cluster/after-restart.png', fullPage: true });

  // The form still holds what was typed, and submits to the new Pods.
  await expect(form.locator('#f-metadata-name')).toHaveValue('typed-before');
  await form.getByRole('button', { name: 'Create' }).click();
  await expect(form).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/typed-before$`));
  expect(await kube.status(`${stacks(ns)}/typed-before`)).toBe(200);
});
