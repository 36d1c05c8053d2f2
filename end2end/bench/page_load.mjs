// What a browser downloads and how long until a page is interactive, debug build beside
// release build, on one control plane, in Debian's Chromium.
//
//   cargo build --workspace && cargo leptos build --frontend-only --split && bash scripts/release.sh
//   target/debug/portico-control-plane --nodes simulated --apply deploy/crds --apply end2end/fixtures/seeds \
//     --apply end2end/fixtures/large exec -- node end2end/bench/page_load.mjs   # BENCH_BUILDS=release
//
// Prints, per build: each bundle file's size raw / gzip / brotli (the app, and the parts
// split off for pages loaded later); per route (a Deployment of 3 simulated Pods is
// created first, for the Pod, workload and node pages), the bytes on the wire (Chromium's
// encodedDataLength, headers included) for a cold first visit in a fresh browser context
// and a warm second one, all of it and the code alone (the .wasm and .js under /pkg/);
// what opening a Pod's terminal adds (xterm.js and its glue, fetched only then); and the
// time from navigation start to hydrated (the App's effect has run) on the home
// page, the CRD page and the largest form, median and worst of BENCH_RUNS (default 7).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';
import { builds, launchChromium, startPortico } from './portico.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 7);
const chosen = (process.env.BENCH_BUILDS ?? 'debug,release').split(',');
const pages = {
  'home': '/',
  'CRD page': '/crds',
  'largest form (DatabaseCluster, 377 fields)': '/r/data.example.com/v1/databaseclusters/new?ns=default',
};
if (!process.env.KUBECONFIG) {
  console.error('KUBECONFIG is not set: run this under portico-control-plane exec (see the top of this file)');
  process.exit(2);
}

// A workload whose Pods (simulated: nothing runs) give the Pod, workload and node pages.
const root = join(import.meta.dirname, '..', '..');
const kubectlPath = execFileSync('bash', [join(root, 'end2end', 'kubernetes', 'build.sh'), 'kubectl'], { encoding: 'utf8' }).trim();
const kubectl = (args, input) => execFileSync(kubectlPath, args, { encoding: 'utf8', input });
kubectl(['apply', '-f', '-'], JSON.stringify({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'bench-web', namespace: 'default' },
  spec: {
    replicas: 3, selector: { matchLabels: { app: 'bench-web' } },
    template: { metadata: { labels: { app: 'bench-web' } }, spec: { containers: [{ name: 'web', image: 'bench/web:1' }] } },
  },
}));
kubectl(['wait', '--for=condition=Available', '--timeout=180s', '-n', 'default', 'deployment/bench-web']);
const [pod, node] = kubectl(['get', 'pods', '-n', 'default', '-l', 'app=bench-web', '-o',
  'jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName}']).trim().split(' ');

// Every kind of page, for what each downloads.
const routes = {
  'home': '/',
  'CRD list': '/crds',
  'resource list (At)': '/r/cnat.study.jayground8/v1alpha1/ats',
  'object (At)': '/r/cnat.study.jayground8/v1alpha1/ats/default/example-at',
  'provision': '/provision',
  'largest form': pages['largest form (DatabaseCluster, 377 fields)'],
  'object (Pod: containers, log, usage)': `/r/core/v1/pods/default/${pod}`,
  'object (Deployment: its Pods, merged log)': '/r/apps/v1/deployments/default/bench-web',
  'object (Node: usage)': `/r/core/v1/nodes/_/${node}`,
};

/** Sizes of the bundle files: raw, and compressed at the levels a server would use. */
function bundleSizes(site) {
  const pkg = join(site, 'pkg');
  const sizes = [];
  for (const name of readdirSync(pkg).sort()) {
    const ext = name.split('.').pop();
    if (!['wasm', 'js', 'css'].includes(ext)) continue;
    const bytes = readFileSync(join(pkg, name));
    const stored = (suffix) => { try { return statSync(join(pkg, name + suffix)).size; } catch { return null; } };
    sizes.push({
      name,
      ext,
      raw: bytes.length,
      gzip: stored('.gz') ?? gzipSync(bytes, { level: 9 }).length,
      brotli: stored('.br') ?? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
      precompressed: stored('.br') !== null,
    });
  }
  return sizes;
}

/**
 * Loads `url` in `page`; returns the bytes received (all, and of code: .wasm and .js
 * under /pkg/) and ms from navigation start to hydrated.
 */
async function visit(page, cdp, url) {
  let bytes = 0;
  let code = 0;
  const parts = [];
  const urls = new Map();
  const onResponse = (e) => urls.set(e.requestId, e.response.url);
  const onFinished = (e) => {
    bytes += e.encodedDataLength;
    const path = new URL(urls.get(e.requestId) ?? 'about:blank').pathname;
    if (path.includes('/pkg/') && /\.(wasm|js)$/.test(path)) {
      code += e.encodedDataLength;
      parts.push(`${path.split('/').pop().replace(/\.[^.]+\.(wasm|js)$/, '')} ${kb(e.encodedDataLength)}`);
    }
  };
  cdp.on('Network.responseReceived', onResponse);
  cdp.on('Network.loadingFinished', onFinished);
  await page.goto(url);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 60_000 });
  const hydratedAt = await page.evaluate(() => window.__porticoHydratedAt);
  // Let late responses (the favicon, prefetches) report their sizes.
  await page.waitForLoadState('networkidle');
  cdp.off('Network.loadingFinished', onFinished);
  cdp.off('Network.responseReceived', onResponse);
  return { bytes, code, parts, hydratedMs: hydratedAt };
}

async function newWatchedContext(browser) {
  const context = await browser.newContext();
  // Records when the App's effect marks the body, relative to navigation start.
  await context.addInitScript(() => {
    new MutationObserver((_, observer) => {
      if (document.body?.dataset.hydrated === 'true') {
        window.__porticoHydratedAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-hydrated'] });
  });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  return { context, page, cdp };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

const browser = await launchChromium();
const chromiumVersion = browser.version();
const results = {};
try {
  for (const [build, paths] of Object.entries(builds).filter(([b]) => chosen.includes(b))) {
    const server = await startPortico(paths);
    try {
      const result = { sizes: bundleSizes(paths.site), pages: {}, routes: {} };
      for (const [label, path] of Object.entries(routes)) {
        // Cold then warm on one context: the second visit may use what the first cached.
        const { context, page, cdp } = await newWatchedContext(browser);
        const cold = await visit(page, cdp, `${server.origin}${path}`);
        const warm = await visit(page, cdp, `${server.origin}${path}`);
        await context.close();
        result.routes[label] = { cold, warm };
      }
      {
        // A Pod's page, then its terminal opened: what the terminal adds on the wire.
        const { context, page, cdp } = await newWatchedContext(browser);
        await visit(page, cdp, `${server.origin}${routes['object (Pod: containers, log, usage)']}`);
        let bytes = 0;
        const urls = new Map();
        const wanted = ['/portico-terminal.js', '/xterm/xterm.mjs', '/xterm/addon-fit.mjs', '/xterm/xterm.css'];
        const finished = new Set();
        let allFinished;
        const done = new Promise((resolve) => { allFinished = resolve; });
        const onResponse = (e) => urls.set(e.requestId, new URL(e.response.url).pathname);
        const onFinished = (e) => {
          bytes += e.encodedDataLength;
          const path = urls.get(e.requestId) ?? '';
          for (const w of wanted) if (path.endsWith(w)) finished.add(w);
          if (finished.size === wanted.length) allFinished();
        };
        cdp.on('Network.responseReceived', onResponse);
        cdp.on('Network.loadingFinished', onFinished);
        await page.getByTestId('terminal-open').first().click();
        await done;
        cdp.off('Network.loadingFinished', onFinished);
        cdp.off('Network.responseReceived', onResponse);
        await context.close();
        result.terminal = bytes;
      }
      for (const [label, path] of Object.entries(pages)) {
        const times = [];
        for (let i = 0; i < runs; i++) {
          // A fresh context each run: a first visit, nothing cached.
          const fresh = await newWatchedContext(browser);
          times.push((await visit(fresh.page, fresh.cdp, `${server.origin}${path}`)).hydratedMs);
          await fresh.context.close();
        }
        result.pages[label] = { median: median(times), worst: Math.max(...times) };
      }
      results[build] = result;
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  await browser.close();
}

console.log(`\nChromium ${chromiumVersion}, ${runs} runs per page\n`);
console.log('| build | file | raw | gzip | brotli | served precompressed |');
console.log('|---|---|---|---|---|---|');
for (const [build, r] of Object.entries(results)) {
  for (const s of r.sizes) {
    console.log(`| ${build} | ${s.name} | ${kb(s.raw)} | ${kb(s.gzip)} | ${kb(s.brotli)} | ${s.precompressed ? 'yes' : 'no'} |`);
  }
  const code = r.sizes.filter((s) => s.ext !== 'css');
  console.log(`| ${build} | all wasm + JS | ${kb(code.reduce((a, s) => a + s.raw, 0))} | ${kb(code.reduce((a, s) => a + s.gzip, 0))} | ${kb(code.reduce((a, s) => a + s.brotli, 0))} | |`);
}
console.log('\n| build | route | first visit: all / code | second visit: all / code |');
console.log('|---|---|---|---|');
for (const [build, r] of Object.entries(results)) {
  for (const [label, { cold, warm }] of Object.entries(r.routes)) {
    console.log(`| ${build} | ${label} | ${kb(cold.bytes)} / ${kb(cold.code)} | ${kb(warm.bytes)} / ${kb(warm.code)} |`);
  }
}
for (const [build, r] of Object.entries(results)) {
  console.log(`| ${build} | opening a Pod's terminal (xterm.js and its glue) | ${kb(r.terminal)} | |`);
}
console.log('\nThe code each first visit fetched, in order (on the wire):\n');
for (const [build, r] of Object.entries(results)) {
  for (const [label, { cold }] of Object.entries(r.routes)) {
    console.log(`- ${build}, ${label}: ${cold.parts.join(', ')}`);
  }
}
console.log('\n| build | ' + Object.keys(pages).map((p) => `hydrated: ${p}, median / worst`).join(' | ') + ' |');
console.log('|---|' + Object.keys(pages).map(() => '---|').join(''));
for (const [build, r] of Object.entries(results)) {
  console.log(`| ${build} | ` +
    Object.values(r.pages).map((p) => `${p.median.toFixed(0)} / ${p.worst.toFixed(0)} ms`).join(' | ') + ' |');
}
