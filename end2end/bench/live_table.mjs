// Live tables in the browser at 10,000 and 50,000 rows: what a person waits for, in
// Debian's Chromium, against a real control plane, beside the floor (the API server's
// own Table list of the same objects).
//
//   cargo build --workspace && bash scripts/release.sh      # or BENCH_BUILD=debug after
//   target/debug/portico-control-plane --apply deploy/crds --apply end2end/fixtures/seeds \
//     exec -- node end2end/bench/live_table.mjs                 # BENCH_SIZES (10000,50000)
//
// Per size it creates that many `At` objects in a namespace of their own, then, on a
// fresh page each time: once cold (no feed running yet: Portico lists from the API
// server, as the floor does), then BENCH_RUNS times warm (the feed is shared; median):
// - first rows: navigation start to the first row in the page;
// - all rows: navigation start to the count saying every row is there;
// - heap: the page's JS heap plus the wasm module's linear memory, with every row held;
// - sort: header click to the new first row in the page;
// - filter: typing a filter to the count of matching rows;
// - burst: 100 objects changed through the API (sent at once) to all 100 in the table.
// Floor: the API server's Table list of the namespace (what kubectl get reads), and
// the time until the API server acknowledged all 100 writes.
import { readFileSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { builds, launchChromium, startPortico } from './portico.mjs';

const sizes = (process.env.BENCH_SIZES ?? '10000,50000').split(',').map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const build = process.env.BENCH_BUILD ?? 'release';
const paths = builds[build];

if (!process.env.KUBECONFIG) {
  console.error('KUBECONFIG is not set: run this under portico-control-plane exec (see the top of this file)');
  process.exit(2);
}

// The control plane's kubeconfig (JSON): its server, CA and client certificate.
const cfg = JSON.parse(readFileSync(process.env.KUBECONFIG, 'utf8'));
const b64 = (s) => Buffer.from(s, 'base64');
const server = new URL(cfg.clusters[0].cluster.server);
const agent = new Agent({
  keepAlive: true,
  maxSockets: 32,
  ca: b64(cfg.clusters[0].cluster['certificate-authority-data']),
  cert: b64(cfg.users[0].user['client-certificate-data']),
  key: b64(cfg.users[0].user['client-key-data']),
});

function kube(method, path, body, headers = {}) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: server.hostname, port: server.port, path, method, agent,
        headers: { accept: 'application/json', ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(text);
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

async function inParallel(items, width, work) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

const ats = (ns) => `/apis/cnat.study.jayground8/v1alpha1/namespaces/${ns}/ats`;
// Commands in a scrambled order, so sorting by them moves every row.
const command = (i) => `echo ${((i * 7919 + 4242) % 100003).toString(36)}`;

/** Records, relative to navigation start, when the first row and the full count appear,
 *  and keeps the wasm module's memory for measuring. */
function watchTable(total) {
  const wrap = (name) => {
    const original = WebAssembly[name];
    WebAssembly[name] = async (...args) => {
      const result = await original.apply(WebAssembly, args);
      window.__wasmMemory = (result.instance ?? result).exports?.memory;
      return result;
    };
  };
  wrap('instantiateStreaming');
  wrap('instantiate');
  // When the tab's socket opened and its first message arrived.
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('open', () => { window.__socketOpen ??= performance.now(); });
      this.addEventListener('message', () => { window.__firstMessage ??= performance.now(); });
    }
  };
  new MutationObserver((_, observer) => {
    if (document.body?.dataset.hydrated === 'true') {
      window.__hydrated = performance.now();
      observer.disconnect();
    }
  }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-hydrated'] });
  new MutationObserver((_, observer) => {
    if (!window.__firstRow && document.querySelector('[data-testid="live-table"] tr.row')) {
      window.__firstRow = performance.now();
    }
    const count = document.querySelector('[data-testid="row-count"]')?.textContent;
    if (!window.__allRows && count === `${total} objects`) {
      window.__allRows = performance.now();
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true, characterData: true });
}

/** In the page: runs `act`, resolves with the ms until `done()` holds after a DOM change
 *  (fails after 30 s). */
const timeUntil = `(act, done) => new Promise((resolve, reject) => {
  setTimeout(() => reject(new Error('not done in 30 s: ' + act + ' / ' + done)), 30000);
  const t0 = performance.now();
  const observer = new MutationObserver(() => {
    if (done()) { observer.disconnect(); resolve(performance.now() - t0); }
  });
  observer.observe(document.querySelector('[data-testid="live-table"]').parentElement.parentElement,
    { childList: true, subtree: true, characterData: true, attributes: true });
  act();
})`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;

async function measure(browser, origin, ns, total) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(watchTable, total);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await page.goto(`${origin}/r/cnat.study.jayground8/v1alpha1/ats?ns=${ns}`);
  await page.waitForFunction(() => window.__allRows, null, { timeout: 120_000, polling: 100 });
  const firstRows = await page.evaluate(() => window.__firstRow);
  const steps = await page.evaluate(() => ({ hydrated: window.__hydrated, socketOpen: window.__socketOpen, firstMessage: window.__firstMessage }));
  console.error(`${total} rows: hydrated ${steps.hydrated?.toFixed(0)} ms, socket open ${steps.socketOpen?.toFixed(0)} ms, ` +
    `first message ${steps.firstMessage?.toFixed(0)} ms, first rows ${firstRows.toFixed(0)} ms`);
  const allRows = await page.evaluate(() => window.__allRows);
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const jsHeap = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
  const wasm = await page.evaluate(() => window.__wasmMemory?.buffer.byteLength ?? 0);

  // Sort by COMMAND: the expected first row is the smallest command.
  const first = await page.evaluate(() => document.querySelector('[data-testid="live-table"] tr.row')?.dataset.name);
  const sort = await page.evaluate(`(${timeUntil})(
    () => document.querySelector('th[data-column="command"]').click(),
    () => document.querySelector('[data-testid="live-table"] tr.row')?.dataset.name !== ${JSON.stringify(first)})`);

  // Filter by a letter some commands hold (and no name, namespace or schedule).
  const filter = await page.evaluate(`(${timeUntil})(
    () => { const input = document.querySelector('input.filter'); input.value = 'k'; input.dispatchEvent(new Event('input', { bubbles: true })); },
    () => / of ${total} objects$/.test(document.querySelector('[data-testid="row-count"]').textContent))`);
  // A burst of 100 changes: time from the first write to all 100 in the table (the
  // filter shows only the rows this burst writes).
  const stamp = `burst${Date.now().toString(36)}`;
  await page.evaluate((word) => { const input = document.querySelector('input.filter'); input.value = word; input.dispatchEvent(new Event('input', { bubbles: true })); }, stamp);
  await page.waitForFunction((t) => document.querySelector('[data-testid="row-count"]').textContent === `0 of ${t} objects`, total);
  const seen = page.evaluate((t) => new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (document.querySelector('[data-testid="row-count"]').textContent === `100 of ${t} objects`) {
        observer.disconnect();
        resolve(Date.now());
      }
    });
    observer.observe(document.querySelector('[data-testid="row-count"]'), { childList: true, subtree: true, characterData: true });
  }), total);
  const sent = Date.now();
  await Promise.all(Array.from({ length: 100 }, (_, i) => kube('PATCH', `${ats(ns)}/at-${String(i * Math.floor(total / 100)).padStart(5, '0')}`,
    { spec: { command: `echo ${stamp}-${i}` } }, { 'content-type': 'application/merge-patch+json' })));
  const acknowledged = Date.now() - sent;
  const burst = (await seen) - sent;
  await context.close();
  return { firstRows, allRows, heapMb: (jsHeap + wasm) / 1e6, jsHeapMb: jsHeap / 1e6, wasmMb: wasm / 1e6, sort, filter, burst, acknowledged };
}

const browser = await launchChromium();
const rows = [];
const portico = await startPortico(paths);
console.error(`portico (${build}) at ${portico.origin}`);
try {
  for (const total of sizes) {
    // Digits only: the filter below must not match every row through its namespace.
    const ns = `bench-${total}-${process.pid}`;
    await kube('POST', '/api/v1/namespaces', { metadata: { name: ns } });
    const created = Date.now();
    await inParallel(Array.from({ length: total }, (_, i) => i), 32, (i) => kube('POST', ats(ns), {
      apiVersion: 'cnat.study.jayground8/v1alpha1', kind: 'At',
      metadata: { name: `at-${String(i).padStart(5, '0')}` },
      spec: { schedule: '2030-01-01T00:00:00Z', command: command(i) },
    }));
    console.error(`${total} objects created in ${((Date.now() - created) / 1000).toFixed(0)} s`);
    const floor = [];
    for (let i = 0; i < runs; i++) {
      const t = Date.now();
      await kube('GET', `${ats(ns)}?includeObject=Metadata`, undefined, { accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' });
      floor.push(Date.now() - t);
    }
    const cold = await measure(browser, portico.origin, ns, total);
    const results = [];
    for (let i = 0; i < runs; i++) results.push(await measure(browser, portico.origin, ns, total));
    rows.push({ total, floor, cold, results });
  }
} finally {
  portico.child.kill('SIGTERM');
  await browser.close();
}

console.log(`\nChromium ${browser.version()}, ${build} build; warm: median (min–max) of ${runs} fresh pages\n`);
console.log('| rows | first rows, cold / warm | all rows, cold / warm | floor: API Table list | JS heap + wasm memory | sort | filter | burst of 100 changes | floor: 100 writes acknowledged |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const { total, floor, cold, results } of rows) {
  const col = (k) => fmt(results.map((r) => r[k]));
  const heap = results.map((r) => r.heapMb);
  console.log(`| ${total.toLocaleString('en')} | ${cold.firstRows.toFixed(0)} / ${col('firstRows')} ms | ${cold.allRows.toFixed(0)} / ${col('allRows')} ms | ${fmt(floor)} ms | ` +
    `${median(heap).toFixed(0)} MB (JS ${median(results.map((r) => r.jsHeapMb)).toFixed(0)} + wasm ${median(results.map((r) => r.wasmMb)).toFixed(0)}) | ` +
    `${col('sort')} ms | ${col('filter')} ms | ${col('burst')} ms | ${col('acknowledged')} ms |`);
}
