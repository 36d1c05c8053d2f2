// The command palette: Ctrl-K (or `/`) on any page, kinds and objects by name across
// namespaces, arrows and Enter, the objects opened last, and `?` for the keys.
import { test, expect } from './fixtures';
import { Kube } from './kube';
import type { Locator, Page } from '@playwright/test';

/// Moves the palette's choice down until `option` is the one chosen (at most once
/// round the list), then presses Enter.
async function choose(page: Page, palette: Locator, option: Locator) {
  const count = await palette.getByRole('option').count();
  for (let i = 0; i < count; i++) {
    if ((await option.getAttribute('aria-selected')) === 'true') break;
    await page.keyboard.press('ArrowDown');
  }
  await expect(option).toHaveAttribute('aria-selected', 'true');
  await page.keyboard.press('Enter');
}

test('Ctrl-K finds an object by name in any namespace, / a kind, and the palette remembers what was opened', async ({ page }) => {
  const kube = new Kube();
  const suffix = Date.now().toString(36);
  const ns = `palette-${suffix}`;
  const name = `needle-${suffix}`;
  await kube.ok('POST', '/api/v1/namespaces', { metadata: { name: ns } });
  try {
    await kube.ok('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name }, data: { a: 'b' } });
    await page.goto('/crds');
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);

    await page.keyboard.press('Control+k');
    const palette = page.getByTestId('palette');
    await expect(palette).toBeVisible();
    await expect(palette.getByRole('combobox')).toBeFocused();
    await page.keyboard.type(name);
    const found = palette.getByRole('option', { name: new RegExp(name) });
    await expect(found).toHaveAttribute('data-section', 'Objects');
    await expect(found).toContainText(`ConfigMap · ${ns}`);
    await expect(page.getByTestId('palette-status')).toContainText('1 of');
    await choose(page, palette, found);
    await expect(page).toHaveURL(new RegExp(`/r/core/v1/configmaps/${ns}/${name}$`));
    await expect(palette).toHaveCount(0);
    await expect(page.locator('.crumbs')).toContainText(name);

    // `/` outside a field opens it too; a kind by its name.
    await page.locator('main').click({ position: { x: 1, y: 1 } });
    await page.keyboard.press('/');
    await expect(palette).toBeVisible();
    await page.keyboard.type('configmap');
    const kind = palette
      .locator('[data-section="Kinds"]')
      .filter({ has: page.locator('.palette-label', { hasText: /^ConfigMap$/ }) });
    await expect(kind).toHaveCount(1);
    await choose(page, palette, kind);
    await expect(page).toHaveURL(/\/r\/core\/v1\/configmaps$/);

    // Nothing typed: the object opened last comes first.
    await page.getByTestId('palette-button').click();
    const recent = palette.getByRole('option').first();
    await expect(recent).toHaveAttribute('data-section', 'Recent');
    await expect(recent).toContainText(name);
    await page.keyboard.press('Escape');
    await expect(palette).toHaveCount(0);

    // `?` lists the keys; Escape closes it.
    await page.locator('main').click({ position: { x: 1, y: 1 } });
    await page.keyboard.press('?');
    await expect(page.getByTestId('keys-help')).toContainText('Go to a kind, an object or an action');
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('keys-help')).toHaveCount(0);
  } finally {
    await kube.request('DELETE', `/api/v1/namespaces/${ns}`);
  }
});
