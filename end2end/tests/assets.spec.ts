import { test, expect } from './fixtures';
import { release } from './spawn';

type Seen = { url: string; status: number; headers: Record<string, string> };

const IMMUTABLE = 'public, max-age=31536000, immutable';
const hashed = (stem: string, ext: string) => new RegExp(`/pkg/${stem}\\.[A-Za-z0-9_-]{22}\\.${ext}$`);

test('the bundle loads by content-hashed names, split by page; what is named by its content is cached for a year; pages are never stored', async ({ page }) => {
  const bundle: Seen[] = [];
  page.on('response', async (r) => {
    if (r.url().includes('/pkg/')) bundle.push({ url: r.url(), status: r.status(), headers: await r.allHeaders() });
  });
  const response = await page.goto('/crds');
  expect(response?.headers()['cache-control']).toBe('no-store');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  // Hydrated: the filter works, which only the wasm bundle can do.
  await page.getByLabel('Filter resource types').fill('sealyun');
  await expect(page.getByTestId('crd-table').locator('tbody tr')).toHaveCount(1);

  const expectations: [RegExp, string][] = [
    [hashed('portico', 'css'), IMMUTABLE],
    // Named again by cargo-leptos once rewritten: its name follows its content.
    [hashed('__wasm_split', 'js'), IMMUTABLE],
    // cargo-leptos writes the loader's name into these after naming them: revalidated.
    [hashed('portico', 'js'), 'no-cache'],
    [hashed('portico', 'wasm'), 'no-cache'],
  ];
  for (const [pattern, cache] of expectations) {
    const file = bundle.find((s) => pattern.test(s.url));
    expect(file, `the page loaded ${pattern}`).toBeDefined();
    expect(file!.status).toBe(200);
    expect(file!.headers['cache-control'], file!.url).toBe(cache);
    if (release) {
      // Precompressed at build time; Chromium offers brotli on loopback HTTP too.
      expect(file!.headers['content-encoding'], file!.url).toMatch(/^(br|gzip)$/);
      expect(file!.headers['vary']?.toLowerCase()).toContain('accept-encoding');
    }
  }
  // A list page downloads no page's part; a form fetches its own when opened.
  const parts = () => bundle.filter((s) => /\/pkg\/(split_|chunk_)/.test(s.url));
  expect(parts()).toHaveLength(0);
  await page.goto('/r/iksoon.test.com/v1/crdplural/new?ns=default');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.locator('#f-spec-choice')).toBeVisible();
  await expect.poll(() => parts().some((s) => /split___create_route_view_/.test(s.url))).toBe(true);
  // The plan and version picker is a Stack form's alone: fetched once the form has
  // hydrated, so only what has settled by then counts.
  const picker = () => parts().filter((s) => /\/pkg\/split_stack_picker_/.test(s.url));
  await page.waitForLoadState('networkidle');
  expect(picker()).toHaveLength(0);
  await page.goto('/r/portico.dev/v1alpha1/stacks/new?ns=default&spec.choice=tomcat');
  await expect(page.getByTestId('stack-picker')).toBeVisible();
  await expect.poll(() => picker().length).toBe(1);
  for (const part of parts()) {
    expect(part.status, part.url).toBe(200);
    expect(part.headers['cache-control'], part.url).toBe('no-cache');
  }
});

test('a request for a bundle file that does not exist is a 404 that is revalidated, not kept', async ({ request }) => {
  const missing = await request.get('/pkg/portico.AAAAAAAAAAAAAAAAAAAAAA.wasm');
  expect(missing.status()).toBe(404);
  expect(missing.headers()['cache-control']).toBe('no-cache');
});

test('a form downloads YAML only once YAML is shown or typed, even with free-form fields on it', async ({ page }) => {
  const yamlParts: { url: string; at: number }[] = [];
  page.on('request', (r) => {
    if (/\/pkg\/split_(to|from)_yaml_/.test(r.url())) yamlParts.push({ url: r.url(), at: Date.now() });
  });
  // DatabaseCluster has free-form fields (edited as YAML), empty in a new object.
  await page.goto('/r/data.example.com/v1/databaseclusters/new?ns=default');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const section = page.locator('#f-spec-podTemplate');
  if ((await section.getAttribute('aria-expanded')) === 'false') await section.click();
  await expect(page.locator('.field[data-path="spec.podTemplate.overrides"] textarea.yaml-input')).toBeVisible();
  await page.locator('#f-metadata-name').fill('lazy-yaml');

  const shownAt = Date.now();
  await page.getByRole('tab', { name: 'YAML' }).click();
  await expect(page.getByTestId('object-yaml-editor')).toHaveValue(/name: lazy-yaml/);
  expect(yamlParts.some((p) => /split_to_yaml_/.test(p.url)), 'YAML written once shown').toBe(true);
  for (const part of yamlParts) expect(part.at, `${part.url} fetched before YAML was shown`).toBeGreaterThanOrEqual(shownAt);
  expect(yamlParts.some((p) => /split_from_yaml_/.test(p.url)), 'nothing read as YAML yet').toBe(false);

  const editor = page.getByTestId('object-yaml-editor');
  await editor.fill((await editor.inputValue()).replace('name: lazy-yaml', 'name: lazy-yaml\n  labels:\n    read: back'));
  await editor.blur();
  await page.getByRole('tab', { name: 'Form' }).click();
  await expect.poll(() => yamlParts.some((p) => /split_from_yaml_/.test(p.url))).toBe(true);
  await page.getByRole('tab', { name: 'YAML' }).click();
  await expect(editor).toHaveValue(/read: back/);
});
