// Views a person keeps: columns added by JSONPath (live, a bad path alone in its
// column), a filter per column, all in the URL; a view saved under a name, an object
// starred, both on the home page and in the palette; the palette's "Logs of …".
import { test, expect } from './fixtures';
import { Kube } from './kube';

test('a column added by JSONPath is live, filters per column stay in the URL, and a saved view comes back from the home page', async ({ page }) => {
  const kube = new Kube();
  const suffix = Date.now().toString(36);
  const ns = `views-${suffix}`;
  await kube.ok('POST', '/api/v1/namespaces', { metadata: { name: ns } });
  try {
    for (const [name, tier] of [['cm-a', 'web'], ['cm-b', 'db'], ['cm-c', 'web']]) {
      await kube.ok('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name, labels: { views: 'yes' } }, data: { tier } });
    }
    // Every namespace has its kube-root-ca.crt: the label selector leaves it out.
    await page.goto(`/r/core/v1/configmaps?ns=${ns}&selector=views%3Dyes`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    const rows = page.locator('tr.row');
    await expect(rows).toHaveCount(3);

    await page.getByTestId('add-column-open').click();
    await page.getByTestId('add-column-name').fill('TIER');
    await page.getByTestId('add-column-path').fill('.data.tier');
    await page.getByTestId('add-column-submit').click();
    await expect(page.locator('th[data-column="TIER"]')).toBeVisible();
    await expect(page).toHaveURL(/columns=TIER/);
    await expect(page.locator('tr.row[data-name="cm-b"]')).toContainText('db');

    // A name taken is refused on the spot; a bad path says why under its header only.
    await page.getByTestId('add-column-open').click();
    await page.getByTestId('add-column-name').fill('tier');
    await page.getByTestId('add-column-path').fill('.data.x');
    await page.getByTestId('add-column-submit').click();
    await expect(page.getByTestId('add-column-problem')).toContainText('already has a column');
    await page.getByTestId('add-column-name').fill('BAD');
    await page.getByTestId('add-column-path').fill('.data[?(@ ==)]');
    await page.getByTestId('add-column-submit').click();
    await expect(page.locator('th[data-column="BAD"] [data-testid="column-problem"]')).toContainText('Not a JSONPath');
    await expect(rows).toHaveCount(3);
    await expect(page.locator('tr.row[data-name="cm-b"]')).toContainText('db');
    await page.getByRole('button', { name: 'Remove column BAD' }).click();
    await expect(page.locator('th[data-column="BAD"]')).toHaveCount(0);
    // A name kubectl's own columns have (DATA) is said under its header; a path
    // past the table's bounds is refused in the form, not by refusing the table.
    await page.getByTestId('add-column-open').click();
    await page.getByTestId('add-column-name').fill('data');
    await page.getByTestId('add-column-path').fill('.data.tier');
    await page.getByTestId('add-column-submit').click();
    await expect(page.locator('th[data-column="data"] [data-testid="column-problem"]')).toContainText("kubectl's columns already have data");
    await page.screenshot({ path: 'test-results/views-taken-column-name.png' });
    await page.getByRole('button', { name: 'Remove column data' }).click();
    await expect(page.locator('th[data-column="data"]')).toHaveCount(0);
    await page.getByTestId('add-column-open').click();
    await page.getByTestId('add-column-name').fill('LONG');
    await page.getByTestId('add-column-path').fill(`.data.${'x'.repeat(2100)}`);
    await page.getByTestId('add-column-submit').click();
    await expect(page.getByTestId('add-column-problem')).toContainText('longer than 2048 characters');
    await page.screenshot({ path: 'test-results/views-columns-too-long.png' });
    await expect(rows).toHaveCount(3);
    await page.getByTestId('add-column-open').click();

    // Live: a change to the field shows in the added column.
    await kube.ok('PATCH', `/api/v1/namespaces/${ns}/configmaps/cm-b`, { data: { tier: 'cache' } }, { 'content-type': 'application/merge-patch+json' });
    await expect(page.locator('tr.row[data-name="cm-b"]')).toContainText('cache');

    // A filter per column, kept in the URL; `!` keeps the rows without the text.
    const tierFilter = page.locator('input.column-filter[data-column="TIER"]');
    await tierFilter.fill('web');
    await expect(rows).toHaveCount(2);
    await expect(page).toHaveURL(/f\.TIER=web/);
    await tierFilter.fill('!web');
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toHaveAttribute('data-name', 'cm-b');
    // Keys typed in a column's filter stay there: Enter opens no row. The key after it
    // still reaches the same field and the table's URL (had Enter opened cm-b, the
    // field would be gone with the table).
    await tierFilter.press('Enter');
    await tierFilter.press('x');
    await expect(page).toHaveURL(/\/r\/core\/v1\/configmaps\?.*f\.TIER=(!|%21)webx/);
    await expect(rows).toHaveCount(3);
    await tierFilter.fill('!web');
    await expect(page).toHaveURL(/f\.TIER=(!|%21)web(&|$)/);
    // From the keyboard: Escape leaves a filter for the rows, `f` comes back to the
    // first column's filter.
    const grid = page.getByRole('grid');
    await tierFilter.press('Escape');
    await expect(grid).toBeFocused();
    await grid.press('ArrowDown');
    await expect(page.locator('tr.row[data-name="cm-b"]')).toHaveAttribute('aria-selected', 'true');
    await grid.press('f');
    await expect(page.locator('input.column-filter').first()).toBeFocused();
    await page.locator('input.column-filter').first().press('Escape');
    await expect(grid).toBeFocused();
    await page.reload();
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    await expect(rows).toHaveCount(1);
    await expect(page.locator('input.column-filter[data-column="TIER"]')).toHaveValue('!web');

    // Saved under a name: the home page and the palette list it, and it opens as saved.
    await page.getByTestId('save-view-open').click();
    await page.getByTestId('save-view-name').fill(`not web ${suffix}`);
    await page.getByTestId('save-view-submit').click();
    await expect(page.getByTestId('saved-note')).toContainText(`not web ${suffix}`);
    await page.goto('/');
    const saved = page.getByTestId('home-saved').getByRole('link', { name: `not web ${suffix}` });
    await expect(saved).toBeVisible();
    await saved.click();
    await expect(page).toHaveURL(/f\.TIER=/);
    await expect(rows).toHaveCount(1);
    await expect(page.locator('tr.row[data-name="cm-b"]')).toContainText('cache');

    // Forgotten, it is gone from the home page.
    await page.goto('/');
    await page.getByRole('button', { name: `Forget not web ${suffix}` }).click();
    await expect(page.getByTestId('home-saved').getByRole('link', { name: `not web ${suffix}` })).toHaveCount(0);
  } finally {
    await kube.request('DELETE', `/api/v1/namespaces/${ns}`);
  }
});

test('a starred object is listed first on the home page and in the palette, and the palette opens a workload at its logs', async ({ page }) => {
  const kube = new Kube();
  const suffix = Date.now().toString(36);
  const ns = `stars-${suffix}`;
  const name = `web-${suffix}`;
  await kube.ok('POST', '/api/v1/namespaces', { metadata: { name: ns } });
  try {
    await kube.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      metadata: { name },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'web', image: 'portico.local/tomcat:9' }] } },
      },
    });
    await page.goto(`/r/apps/v1/deployments/${ns}/${name}`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    const star = page.getByTestId('star');
    await expect(star).toHaveAttribute('aria-pressed', 'false');
    await star.click();
    await expect(star).toHaveAttribute('aria-pressed', 'true');

    await page.goto('/');
    const item = page.getByTestId('home-saved').getByTestId('saved-item').filter({ hasText: name });
    await expect(item).toContainText('★');
    await expect(item).toContainText(`deployments · ${ns}`);

    await page.getByTestId('palette-button').click();
    const palette = page.getByTestId('palette');
    const first = palette.getByRole('option').first();
    await expect(first).toHaveAttribute('data-section', 'Starred');
    await expect(first).toContainText(name);

    // Typed, a workload found offers its logs; Enter goes to the page, at the logs.
    // Made moments ago, it is found: the first question after opening reads afresh.
    await palette.getByRole('combobox').fill(name);
    const logs = palette.getByRole('option', { name: new RegExp(`Logs of deployment/${name}`) });
    await expect(logs).toBeVisible();
    await logs.click();
    await expect(page).toHaveURL(new RegExp(`/r/apps/v1/deployments/${ns}/${name}#logs$`));
    await expect(page.locator('#logs')).toBeInViewport();

    // Unstarred, the home page no longer lists it.
    await page.getByTestId('star').click();
    await expect(page.getByTestId('star')).toHaveAttribute('aria-pressed', 'false');
    await page.goto('/');
    await expect(page.getByTestId('home-saved').getByTestId('saved-item').filter({ hasText: name })).toHaveCount(0);
  } finally {
    await kube.request('DELETE', `/api/v1/namespaces/${ns}`);
  }
});
