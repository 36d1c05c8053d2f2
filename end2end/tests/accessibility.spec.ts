// Light and dark follow the system unless the person picks one (remembered across
// pages and reloads); every kind of page passes axe-core's checks in both.
import { readFileSync } from 'node:fs';
import { test, expect } from './fixtures';
import { Kube, ats, at } from './kube';
import type { Page } from '@playwright/test';

const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's violations on the page as it is now, one line each. */
async function violations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(`${axeSource}\n;0`);
  const found: { id: string; help: string; nodes: { target: string[] }[] }[] = await page.evaluate(
    async () => (await (window as any).axe.run(document, { resultTypes: ['violations'] })).violations,
  );
  return found.map((v) => `${v.id} (${v.help}): ${v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(', ')}`);
}

test('the theme button picks dark or light over the system, and it holds across pages', async ({ page }) => {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto('/crds');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const html = page.locator('html');
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  await expect(html).toHaveAttribute('data-theme', 'system');
  const light = await background();
  await page.emulateMedia({ colorScheme: 'dark' });
  const systemDark = await background();
  expect(systemDark, "the system's dark scheme is followed").not.toEqual(light);

  await page.emulateMedia({ colorScheme: 'light' });
  await page.getByTestId('theme-button').click();
  await expect(html).toHaveAttribute('data-theme', 'dark');
  expect(await background()).toEqual(systemDark);
  // Written by the server on the next page: no flash of the other theme.
  const served = await page.request.get('/provision');
  expect(await served.text()).toContain('data-theme="dark"');
  await page.reload();
  await expect(html).toHaveAttribute('data-theme', 'dark');
  await expect(page.getByTestId('theme-button')).toContainText('Dark');

  await page.getByTestId('theme-button').click();
  await expect(html).toHaveAttribute('data-theme', 'light');
  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await background()).toEqual(light);
  await page.getByTestId('theme-button').click();
  await expect(html).toHaveAttribute('data-theme', 'system');
  expect(await background()).toEqual(systemDark);
});

for (const theme of ['light', 'dark']) {
  test(`every kind of page has no axe-core violation, ${theme}`, async ({ page, baseURL }) => {
    const kube = new Kube();
    const ns = await kube.freshNamespace(`a11y-${theme}`);
    await kube.ok('POST', ats(ns), at('first'));
    await page.context().addCookies([{ name: 'portico-theme', value: theme, url: baseURL! }]);
    const pages: [string, string][] = [
      ['home', `/?ns=${ns}`],
      ['resource types', '/crds'],
      ['a live table', `/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`],
      // With a column added by JSONPath, one that cannot be read, and a column's filter.
      ['a kept view', `/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}&columns=${encodeURIComponent('CMD:.spec.command,BAD:.spec[?(@ ==)]')}&f.CMD=echo`],
      ['an object', `/r/cnat.study.jayground8/v1alpha1/ats/${ns}/first`],
      ['a create form', `/r/iksoon.test.com/v1/crdplural/new?ns=${ns}`],
      ['the catalog', '/provision'],
      ['a Stack form', `/provision/new?ns=${ns}&spec.choice=mysql`],
      ['what may I do here', `/access?ns=${ns}`],
      ['several kinds', `/many?kinds=ats,pods&ns=${ns}`],
    ];
    const found: string[] = [];
    for (const [name, path] of pages) {
      await page.goto(path);
      await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
      await expect(page.locator('html')).toHaveAttribute('data-theme', theme);
      if (name === 'a live table') await expect(page.locator('td.name', { hasText: 'first' })).toBeVisible();
      if (name === 'a kept view') {
        await expect(page.locator('td.name', { hasText: 'first' })).toBeVisible();
        await expect(page.getByTestId('column-problem')).toBeVisible();
      }
      if (name === 'several kinds') await expect(page.locator('tr[data-kind="At"][data-name="first"]')).toBeVisible();
      if (name === 'an object') await expect(page.getByTestId('object-name')).toHaveText('first');
      if (name === 'what may I do here') {
        // Local mode acts as the portal's own identity, which may list Ats there.
        await expect(page.locator('tr[data-kind="At"] td.verb').nth(1)).toHaveClass(/allowed/);
      }
      found.push(...(await violations(page)).map((v) => `${name}: ${v}`));
    }
    // The palette open over a page.
    await page.keyboard.press('Control+k');
    await expect(page.getByTestId('palette').getByRole('combobox')).toBeFocused();
    await page.keyboard.type('ats');
    await expect(page.getByTestId('palette').locator('[data-section="Kinds"]').first()).toContainText('At');
    await expect(page.getByTestId('palette').getByRole('option').first()).toBeVisible();
    found.push(...(await violations(page)).map((v) => `palette: ${v}`));
    await page.screenshot({ path: `test-results/palette-${theme}.png` });
    expect(found).toEqual([]);
  });
}
