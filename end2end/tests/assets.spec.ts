import { test, expect } from './fixtures';
import { release } from './spawn';

type Seen = { url: string; status: number; headers: Record<string, string> };

test('the bundle loads by content-hashed names cached for a year; pages are never stored', async ({ page }) => {
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

  for (const ext of ['js', 'wasm', 'css']) {
    const file = bundle.find((s) => s.url.endsWith(`.${ext}`));
    expect(file, `the page loaded a .${ext}`).toBeDefined();
    expect(file!.url).toMatch(new RegExp(`/pkg/portico\\.[A-Za-z0-9_-]{22}\\.${ext}$`));
    expect(file!.status).toBe(200);
    expect(file!.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    if (release) {
      // Precompressed at build time; Chromium offers brotli on loopback HTTP too.
      expect(file!.headers['content-encoding'], file!.url).toMatch(/^(br|gzip)$/);
      expect(file!.headers['vary']?.toLowerCase()).toContain('accept-encoding');
    }
  }
});

test('a request for a bundle file that does not exist is a 404 that is revalidated, not kept', async ({ request }) => {
  const missing = await request.get('/pkg/portico.AAAAAAAAAAAAAAAAAAAAAA.wasm');
  expect(missing.status()).toBe(404);
  expect(missing.headers()['cache-control']).toBe('no-cache');
});
