// The real-world CRD corpus (end2end/crd-corpus, loaded by serve.sh from the projects'
// own Go modules): every create and edit page of every served version renders on the
// server and hydrates without an error; every list page of every served version prints
// every row and cell `kubectl get` and `kubectl get -o wide` print (kubectl built from
// the same Kubernetes version, end2end/tests/kubectl.ts). How
// long each page took is recorded in test-results/corpus-<build>.json, not asserted:
// timings belong in benchmarks.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from './fixtures';
import { ExtraPortico, release } from './spawn';
import { expectKubectlTable } from './kubectl';

type Entry = {
  project: string;
  name: string;
  group: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  versions: string[];
  sample_name: string;
  sample_namespace: string | null;
};

const statePath = join(__dirname, '..', '.state', 'corpus.json');
const corpus: Entry[] = existsSync(statePath) ? JSON.parse(readFileSync(statePath, 'utf8')) : [];
const build = release ? 'release' : 'debug';

// How long a page may take to hydrate before the test gives up: a wait for a page
// that never hydrates, generous for a loaded machine, not a budget.
const PAGE_WAIT_MS = 60_000;

type Timing = { page: string; ssr: number; hydrate: number };
const timings: Timing[] = [];

test.describe.configure({ mode: 'serial' });
test.skip(corpus.length === 0, 'the corpus is loaded only into the local control plane serve.sh starts');

// A Portico of its own (same cluster and build): the hundreds of pages and live tables
// opened here count against this process's per-person limits, not the suite's server.
let portico: ExtraPortico;
test.beforeAll(async () => {
  portico = await ExtraPortico.start({});
});
test.afterAll(() => portico?.stop());
const at = (path: string) => `${portico.origin}${path}`;

test.beforeEach(async ({ page }) => {
  // When <body> is marked hydrated, relative to the navigation's start.
  await page.addInitScript(() => {
    new MutationObserver((_, observer) => {
      if (document.body?.dataset.hydrated === 'true') {
        (window as any).__hydratedAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-hydrated'] });
  });
});

async function visit(page: any, path: string, errors: string[]): Promise<Timing> {
  await page.goto(at(path));
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1, { timeout: PAGE_WAIT_MS });
  await expect(page.locator('form.object-form')).toBeVisible();
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    return { ssr: nav.responseEnd - nav.requestStart, hydrate: (window as any).__hydratedAt - nav.responseEnd };
  });
  expect(errors, `${path}: console errors`).toEqual([]);
  return { page: path, ssr: Math.round(t.ssr), hydrate: Math.round(t.hydrate) };
}

for (const entry of corpus) {
  test(`${entry.project}: ${entry.kind} (${entry.name}) create and edit pages, every version`, async ({ page }) => {
    // Two pages a version, each waited for up to PAGE_WAIT_MS.
    test.setTimeout(60_000 + 2 * entry.versions.length * PAGE_WAIT_MS);
    const errors: string[] = [];
    page.on('console', (m: any) => m.type() === 'error' && errors.push(m.text()));
    page.on('response', (r: any) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    const ns = entry.sample_namespace ?? '_';
    for (const version of entry.versions) {
      const base = `/r/${entry.group}/${version}/${entry.plural}`;
      const created = await visit(page, `${base}/new${entry.namespaced ? `?ns=${ns}` : ''}`, errors);
      const edited = await visit(page, `${base}/${ns}/${entry.sample_name}/edit`, errors);
      await expect(page.locator('#f-metadata-name')).toHaveValue(entry.sample_name);
      timings.push(created, edited);
    }
  });
}

// The three largest schemas of the corpus, by the size of their CRD.
const LARGEST = [
  ['kyverno.io', 'v1', 'clusterpolicies', ''],
  ['argoproj.io', 'v1alpha1', 'applicationsets', '?ns=corpus'],
  ['monitoring.coreos.com', 'v1', 'prometheuses', '?ns=corpus'],
];

test('the largest forms open as a page of headings, errors wait for a touch or a submit, the search opens the way', async ({
  page,
}) => {
  test.setTimeout(60_000 + LARGEST.length * PAGE_WAIT_MS);
  for (const [group, version, plural, query] of LARGEST) {
    await page.goto(at(`/r/${group}/${version}/${plural}/new${query}`));
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1, { timeout: PAGE_WAIT_MS });
    // Nothing is marked wrong before the person does anything.
    await expect(page.locator('.field-error')).toHaveCount(0);
    // Optional sections with nothing in them are closed; required ones are open.
    expect(await page.locator('.section-field:not(.open)').count()).toBeGreaterThan(2);
    const openButEmpty = page
      .locator('.section-field.open > .section-toggle')
      .filter({ hasNot: page.locator('.req') })
      .filter({ hasText: 'not set' });
    await expect(openButEmpty).toHaveCount(0);
    await page.screenshot({ path: `test-results/corpus-form-${plural}-${build}.png` });
    // The wasm module's linear memory (its heap) with this form on screen: asking
    // wasm-bindgen's init again hands back the running instance's exports.
    const wasmBytes = await page.evaluate(async () => {
      const href = document.querySelector('link[rel="modulepreload"]')?.getAttribute('href') ?? '';
      const bindings = await import(href);
      const exports = await bindings.default();
      return exports.memory.buffer.byteLength;
    });
    console.log(`wasm heap (${build}) on the ${plural} form: ${(wasmBytes / 1048576).toFixed(1)} MiB`);
    expect(wasmBytes).toBeLessThan(256 * 1048576);
  }

  // Prometheus: find a field three sections deep and land on it.
  const path = 'spec.storage.volumeClaimTemplate.spec.storageClassName';
  await page.getByTestId('field-search').fill('storageClassName');
  await page.locator('.search-results button', { hasText: path }).click();
  await expect(page.locator(`.field[data-path="${path}"]`)).toBeInViewport();
  await expect(page.locator(`.field[data-path="${path}"] input`)).toBeFocused();
  await page.screenshot({ path: `test-results/corpus-form-search-${build}.png` });

  // Documentation is one click away.
  const doc = page.locator('.field[data-path="spec.replicas"] details.field-doc');
  await doc.locator('summary').click();
  await expect(doc).toHaveAttribute('open', '');

  // A submit attempt shows every problem and brings the first into view.
  await page.locator('form.object-form button[type="submit"]').click();
  const nameError = page.locator('.field[data-path="metadata.name"] .field-error');
  await expect(nameError).toHaveText('Required.');
  await expect(nameError).toBeInViewport();
});

test("every corpus kind's list pages print kubectl get's and kubectl get -o wide's tables, every served version", async ({
  page,
}) => {
  // Every kind, version and width in turn, each a page and two kubectl runs.
  test.setTimeout(60_000 + corpus.length * 60_000);
  for (const entry of corpus) {
    for (const version of entry.versions) {
      for (const wide of [false, true]) {
        const resource = `${entry.plural}.${version}.${entry.group}`;
        await expectKubectlTable(page, portico.origin, { resource, namespace: entry.sample_namespace ?? undefined, wide });
      }
    }
  }
});

test.afterAll(() => {
  if (timings.length === 0) return;
  const dir = join(__dirname, '..', 'test-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `corpus-${build}.json`), JSON.stringify(timings, null, 2));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const worst = [...timings].sort((a, b) => b.ssr + b.hydrate - (a.ssr + a.hydrate)).slice(0, 5);
  console.log(
    `corpus (${build}): ${timings.length} pages; server render median ${median(timings.map((t) => t.ssr))} ms, ` +
      `worst ${Math.max(...timings.map((t) => t.ssr))} ms; hydration median ${median(timings.map((t) => t.hydrate))} ms, ` +
      `worst ${Math.max(...timings.map((t) => t.hydrate))} ms. Worst five (render + hydrate):`,
  );
  for (const t of worst) console.log(`  ${t.ssr} + ${t.hydrate} ms  ${t.page}`);
});
