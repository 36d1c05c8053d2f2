import { test, expect } from './fixtures';
import { Kube, at, ats } from './kube';

test('rows appear, change and vanish as the API server changes them', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('live');
  await page.goto(`/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`);
  await expect(page.getByTestId('live-status')).toHaveText('Live');
  await expect(page.getByTestId('live-table').locator('th')).toHaveText(['NAME', 'SCHEDULE', 'COMMAND', 'PHASE']);

  // Each change is waited for, not timed: how fast it arrives is a benchmark's figure.
  const row = page.locator('tr[data-name="nightly"]');
  await kube.ok('POST', ats(ns), at('nightly'));
  await expect(row).toHaveCount(1);
  await expect(row.locator('td')).toHaveText(['nightly', '2030-01-01T00:00:00Z', 'echo hi', '']);

  await kube.ok('PATCH', `${ats(ns)}/nightly/status`, { status: { phase: 'RUNNING' } }, {
    'content-type': 'application/merge-patch+json',
  });
  await expect(row.locator('td').nth(3)).toHaveText('RUNNING');

  await kube.ok('DELETE', `${ats(ns)}/nightly`);
  await expect(row).toHaveCount(0);
  await page.screenshot({ path: 'test-results/live-table.png', fullPage: true });
});

test('a long name is shown whole on a wide screen, other cells giving way first', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('wide');
  // 119 characters: kubectl prints it whole; so does the table, on a 1,920 px screen.
  const name = `nightly-${'report-'.repeat(16)}`.slice(0, 116) + 'end';
  await kube.ok('POST', ats(ns), at(name, 'echo '.repeat(60)));
  await page.setViewportSize({ width: 1920, height: 1000 });
  await page.goto(`/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`);
  const cell = page.locator(`tr[data-name="${name}"] td.name`);
  await expect(cell).toHaveText(name);
  const cut = await cell.evaluate((td) => td.scrollWidth > td.clientWidth);
  expect(cut, 'the NAME cell is not cut').toBe(false);
  await page.screenshot({ path: 'test-results/live-table-wide.png' });
});

test('markup in a field renders as inert text', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('xss');
  const payload = '<img src=x onerror=alert(1)>';
  await kube.ok('POST', ats(ns), at('hostile', payload));
  let dialogs = 0;
  page.on('dialog', (d) => {
    dialogs += 1;
    return d.dismiss();
  });
  await page.goto(`/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`);
  const row = page.locator('tr[data-name="hostile"]');
  await expect(row.locator('td').nth(2)).toHaveText(payload);
  await expect(page.getByTestId('live-table').locator('img')).toHaveCount(0);
  expect(dialogs).toBe(0);
});

test('CrdKind shows kubectl columns, priority-1 columns only in the wide view, and the API cells', async ({ page }) => {
  const kube = new Kube();
  const table = await kube.ok('GET', '/apis/iksoon.test.com/v1/namespaces/default/crdplural', undefined, {
    accept: 'application/json;as=Table;g=meta.k8s.io;v=v1',
  });
  const headers = (wide: boolean) =>
    table.columnDefinitions.filter((c: any) => wide || c.priority === 0).map((c: any) => c.name.toUpperCase());

  await page.goto('/r/iksoon.test.com/v1/crdplural?ns=default');
  await expect(page.getByTestId('live-status')).toHaveText('Live');
  const grid = page.getByTestId('live-table');
  await expect(grid.locator('th')).toHaveText(headers(false));
  expect(headers(false)).toEqual(['NAME', 'DBORWAS', 'AGE']);

  await page.getByLabel('Wide').check();
  await expect(page).toHaveURL(/wide=true/);
  await expect(grid.locator('th')).toHaveText(headers(true));
  expect(headers(true)).toEqual(['NAME', 'DBORWAS', 'REPLICAS', 'AGE']);

  // Every non-date cell equals the Table API's cell (dates are ages, as kubectl prints them).
  for (const apiRow of table.rows) {
    const name = apiRow.object.metadata.name;
    const cells = page.locator(`tr[data-name="${name}"] td`);
    const expected = table.columnDefinitions.map((c: any, i: number) =>
      c.type === 'date' ? /^\d+[smhdy]/ : apiRow.cells[i] === null ? '' : String(apiRow.cells[i]),
    );
    await expect(cells).toHaveText(expected);
  }

  // The URL holds the view: reloading keeps wide, filter and sort.
  await page.getByLabel('Filter rows').fill('mysql');
  await expect(page).toHaveURL(/q=mysql/);
  await grid.locator('th[data-column="Name"]').click();
  await expect(page).toHaveURL(/sort=Name/);
  await page.reload();
  await expect(page.getByLabel('Wide')).toBeChecked();
  await expect(page.getByLabel('Filter rows')).toHaveValue('mysql');
  await expect(grid.locator('th[data-column="Name"] .sort-mark')).toHaveText(' ▲');
});
