// `kubectl get`'s own output beside a live table of Portico's: the same headers, the
// same rows, the same cells (kubectl built from the cluster's Kubernetes version,
// end2end/kubernetes/build.sh). kubectl prints its table before the page is read and
// again after: durations only grow, so a duration in a page's cell (AGE, "2 (5m ago)")
// lies between the two, however long anything took; everything else is equal.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, Page } from '@playwright/test';

const root = join(__dirname, '..', '..');
const kubeconfig = process.env.PORTICO_E2E_KUBECONFIG ?? join(__dirname, '..', '.state', 'kubeconfig.json');
let kubectlPath: string | undefined;

function kubectl(args: string[]): string {
  kubectlPath ??= execFileSync('bash', [join(root, 'end2end', 'kubernetes', 'build.sh'), 'kubectl'], {
    encoding: 'utf8',
  }).trim();
  return execFileSync(kubectlPath, args, {
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export type Listed = { resource: string; namespace?: string; wide: boolean };
export type PrintedTable = { headers: string[]; rows: string[][] };

/** `kubectl get RESOURCE [-n NS] [-o wide]`'s table, cells cut at the header's column
 * starts (every header is one word or words joined by single spaces). */
export function kubectlTable({ resource, namespace, wide }: Listed): PrintedTable {
  const args = ['get', resource];
  if (namespace) args.push('-n', namespace);
  if (wide) args.push('-o', 'wide');
  const lines = kubectl(args).split('\n').filter((l) => l.length > 0);
  if (lines.length === 0) return { headers: [], rows: [] };
  const [header, ...rows] = lines;
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => m.index ?? 0);
  const cut = (line: string) =>
    starts.map((s, i) => [...line].slice(s, i + 1 < starts.length ? starts[i + 1] : undefined).join('').trim());
  return { headers: cut(header), rows: rows.map(cut) };
}

const UNIT: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, y: 31536000 };
const DURATION = /\b(?:\d+[smhdy])+\b/g;

/** Seconds in one of kubectl's durations ("45s", "2m3s", "5h"). */
export function seconds(duration: string): number {
  return [...duration.matchAll(/(\d+)([smhdy])/g)].reduce((sum, m) => sum + Number(m[1]) * UNIT[m[2]], 0);
}

/** The step of a printed duration: its smallest unit ("3m17s": 1 s, "12m": 60 s). */
function step(duration: string): number {
  return UNIT[duration.slice(-1)] ?? 1;
}

/** Whether a page's cell says what kubectl printed before it was read (`before`) and
 * after (`after`): equal to either, or the same words with each duration between. The
 * page prints its ages on a clock that ticks once a second, so a duration may be up to
 * one tick older than kubectl's first print: one step of that print's smallest unit. */
export function sameCell(shown: string, before: string, after: string): boolean {
  if (shown === after || shown === before) return true;
  const [ds, db, da] = [shown, before, after].map((c) => c.match(DURATION) ?? []);
  if (ds.length === 0 || ds.length !== db.length || ds.length !== da.length) return false;
  const words = shown.replace(DURATION, '#');
  if (words !== before.replace(DURATION, '#') || words !== after.replace(DURATION, '#')) return false;
  return ds.every((d, i) => seconds(db[i]) - step(db[i]) <= seconds(d) && seconds(d) <= seconds(da[i]));
}

/** Where Portico lists `resource` (`plural.version.group`, or `plural` of core/v1). */
export function listPath({ resource, namespace, wide }: Listed): string {
  const [plural, version = 'v1', ...group] = resource.split('.');
  const query = [namespace ? `ns=${namespace}` : '', wide ? 'wide=true' : ''].filter(Boolean).join('&');
  return `/r/${group.length > 0 ? group.join('.') : 'core'}/${version}/${plural}${query ? `?${query}` : ''}`;
}

/** The live table on `page` shows exactly kubectl's headers and rows (each row found by
 * its name), waiting for the two to agree: a row may still be on its way to either. */
export async function expectKubectlTable(page: Page, origin: string, listed: Listed) {
  const label = `${listed.resource}${listed.namespace ? ` -n ${listed.namespace}` : ''}${listed.wide ? ' -o wide' : ''}`;
  // The table renders the rows in view (a virtual window): a window tall enough for
  // every row kubectl prints, and some to spare.
  const count = kubectlTable(listed).rows.length;
  await page.setViewportSize({ width: 1600, height: Math.max(1080, (count + 20) * 34 + 400) });
  await page.goto(`${origin}${listPath(listed)}`);
  await expect(page.getByTestId('live-status'), label).toHaveText('Live');
  const grid = page.getByTestId('live-table');
  await expect(async () => {
    const before = kubectlTable(listed);
    // Portico's own columns after kubectl's (a Pod table's usage) are marked data-extra.
    const headers = (await grid.locator('th:not([data-extra])').allTextContents()).map((h) => h.replace(/[ ▲▼]+$/, '').trim());
    const shown = await grid.locator('tr[data-name]').evaluateAll((rows) =>
      rows.map((r) => [...r.querySelectorAll('td:not([data-extra])')].map((td) => (td.textContent ?? '').trim())),
    );
    const after = kubectlTable(listed);
    expect(headers, `${label}: headers`).toEqual(after.headers);
    const names = (t: PrintedTable) => t.rows.map((r) => r[0]).sort();
    expect(names(after), `${label}: the same rows before and after`).toEqual(names(before));
    const byName = new Map(shown.map((cells) => [cells[0], cells]));
    expect([...byName.keys()].sort(), `${label}: rows`).toEqual(names(after));
    const earlier = new Map(before.rows.map((r) => [r[0], r]));
    for (const row of after.rows) {
      const cells = byName.get(row[0])!;
      const then = earlier.get(row[0])!;
      row.forEach((cell, i) => {
        const what = `${label}: ${row[0]} ${after.headers[i]}: "${cells[i]}", kubectl "${then[i]}" then "${cell}"`;
        expect(sameCell(cells[i] ?? '', then[i] ?? '', cell), what).toBe(true);
      });
    }
  // A wait, not a deadline. Once (session 34, not explained yet) a list page's AGE stood
  // 31 s behind kubectl's for the whole of a 30 s wait; a page whose ages never catch up
  // still fails.
  }).toPass({ timeout: 60_000 });
}
