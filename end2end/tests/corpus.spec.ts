// The real-world CRD corpus (end2end/crd-corpus, loaded by serve.sh from the projects'
// own Go modules): every create and edit page of every served version renders on the
// server and hydrates without an error, within budget; every list page prints the
// headers and cells `kubectl get -o wide` prints (kubectl built from the same
// Kubernetes version). Timings go to test-results/corpus-<build>.json.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from './fixtures';
import { ExtraPortico, release } from './spawn';

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

const root = join(__dirname, '..', '..');
const statePath = join(__dirname, '..', '.state', 'corpus.json');
const kubeconfig = process.env.PORTICO_E2E_KUBECONFIG ?? join(__dirname, '..', '.state', 'kubeconfig.json');
const corpus: Entry[] = existsSync(statePath) ? JSON.parse(readFileSync(statePath, 'utf8')) : [];
const build = release ? 'release' : 'debug';

// Budgets per page, measured on this 2-core machine with the debug build (the release
// build is several times faster): server render, and from the HTML's arrival to a
// hydrated page (wasm fetched, compiled and run).
const SSR_BUDGET_MS = 3_000;
const HYDRATE_BUDGET_MS = 15_000;

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
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1, { timeout: HYDRATE_BUDGET_MS });
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
    const errors: string[] = [];
    page.on('console', (m: any) => m.type() === 'error' && errors.push(m.text()));
    page.on('response', (r: any) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    const ns = entry.sample_namespace ?? '_';
    for (const version of entry.versions) {
      const base = `/r/${entry.group}/${version}/${entry.plural}`;
      const created = await visit(page, `${base}/new${entry.namespaced ? `?ns=${ns}` : ''}`, errors);
      const edited = await visit(page, `${base}/${ns}/${entry.sample_name}/edit`, errors);
      await expect(page.locator('#f-metadata-name')).toHaveValue(entry.sample_name);
      for (const t of [created, edited]) {
        expect(t.ssr, `${t.page} server render`).toBeLessThan(SSR_BUDGET_MS);
        expect(t.hydrate, `${t.page} hydration`).toBeLessThan(HYDRATE_BUDGET_MS);
        timings.push(t);
      }
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
  for (const [group, version, plural, query] of LARGEST) {
    await page.goto(at(`/r/${group}/${version}/${plural}/new${query}`));
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
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

/** `kubectl get -o wide`'s table: cells cut at the header's column starts. */
function kubectlTable(entry: Entry, version: string): { headers: string[]; rows: string[][] } {
  const kubectl = execFileSync('bash', [join(root, 'end2end', 'kubernetes', 'build.sh'), 'kubectl'], {
    encoding: 'utf8',
  }).trim();
  const args = ['get', `${entry.plural}.${version}.${entry.group}`, '-o', 'wide'];
  if (entry.sample_namespace) args.push('-n', entry.sample_namespace);
  const out = execFileSync(kubectl, args, { encoding: 'utf8', env: { ...process.env, KUBECONFIG: kubeconfig } });
  const [header, ...lines] = out.split('\n').filter((l) => l.length > 0);
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => m.index ?? 0);
  const cut = (line: string) =>
    starts.map((s, i) => [...line].slice(s, i + 1 < starts.length ? starts[i + 1] : undefined).join('').trimEnd());
  return { headers: cut(header), rows: lines.map(cut) };
}

/** Seconds in one of kubectl's ages ("45s", "2m3s", "5h"). */
function seconds(age: string): number {
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, y: 31536000 };
  return [...age.matchAll(/(\d+)([smhdy])/g)].reduce((sum, m) => sum + Number(m[1]) * unit[m[2]], 0);
}

test("every corpus kind's list page prints kubectl get -o wide's headers and cells", async ({ page }) => {
  for (const entry of corpus) {
    const version = entry.versions[0];
    const query = entry.sample_namespace ? `?ns=${entry.sample_namespace}&wide=true` : '?wide=true';
    await page.goto(at(`/r/${entry.group}/${version}/${entry.plural}${query}`));
    await expect(page.getByTestId('live-status')).toHaveText('Live');
    const grid = page.getByTestId('live-table');
    await expect(grid.locator(`tr[data-name="${entry.sample_name}"]`)).toHaveCount(1);
    const expected = kubectlTable(entry, version);
    const headers = await grid.locator('th').allTextContents();
    expect(headers.map((h: string) => h.replace(/[ ▲▼]+$/, '')), `${entry.name} headers`).toEqual(expected.headers);
    const cells = await grid.locator(`tr[data-name="${entry.sample_name}"] td`).allTextContents();
    const row = expected.rows.find((r) => r[0] === entry.sample_name);
    expect(row, `${entry.name}: kubectl lists the sample`).toBeTruthy();
    expected.headers.forEach((h, i) => {
      if (h === 'AGE') {
        // Printed a moment apart: the same age within a few seconds.
        expect(Math.abs(seconds(cells[i]) - seconds(row![i])), `${entry.name} AGE`).toBeLessThanOrEqual(5);
      } else {
        expect(cells[i], `${entry.name} ${h}`).toBe(row![i]);
      }
    });
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
