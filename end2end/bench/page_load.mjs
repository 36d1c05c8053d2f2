// What a browser downloads and how long until a page is interactive, debug build beside
// release build, on one control plane, in Debian's Chromium.
//
//   cargo build --workspace && cargo leptos build --frontend-only && bash scripts/release.sh
//   target/debug/portico-control-plane --apply deploy/crds --apply end2end/fixtures/seeds \
//     --apply end2end/fixtures/large exec -- node end2end/bench/page_load.mjs
//
// Prints, per build: the wasm, JS and CSS sizes raw / gzip / brotli; the bytes on the
// wire (Chromium's encodedDataLength, headers included) for a cold first visit and a warm
// second one; and the time from navigation start to hydrated (the App's effect has run)
// on the CRD page and on the largest form, median and worst of BENCH_RUNS (default 7).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';
import { builds, launchChromium, startPortico } from './portico.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 7);
const pages = {
  'CRD page': '/crds',
  'largest form (DatabaseCluster, 377 fields)': '/r/data.example.com/v1/databaseclusters/new?ns=default',
};

if (!process.env.KUBECONFIG) {
  console.error('KUBECONFIG is not set: run this under portico-control-plane exec (see the top of this file)');
  process.exit(2);
}

/** Sizes of the bundle files: raw, and compressed at the levels a server would use. */
function bundleSizes(site) {
  const pkg = join(site, 'pkg');
  const sizes = {};
  for (const name of readdirSync(pkg)) {
    const ext = name.split('.').pop();
    if (!['wasm', 'js', 'css'].includes(ext)) continue;
    const bytes = readFileSync(join(pkg, name));
    const stored = (suffix) => { try { return statSync(join(pkg, name + suffix)).size; } catch { return null; } };
    sizes[ext] = {
      name,
      raw: bytes.length,
      gzip: stored('.gz') ?? gzipSync(bytes, { level: 9 }).length,
      brotli: stored('.br') ?? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
      precompressed: stored('.br') !== null,
    };
  }
  return sizes;
}

/** Loads `url` in `page`; returns bytes received and ms from navigation start to hydrated. */
async function visit(page, cdp, url) {
  let bytes = 0;
  const onFinished = (e) => { bytes += e.encodedDataLength; };
  cdp.on('Network.loadingFinished', onFinished);
  await page.goto(url);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 60_000 });
  const hydratedAt = await page.evaluate(() => window.__porticoHydratedAt);
  // Let late responses (the favicon, prefetches) report their sizes.
  await page.waitForLoadState('networkidle');
  cdp.off('Network.loadingFinished', onFinished);
  return { bytes, hydratedMs: hydratedAt };
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
  for (const [build, paths] of Object.entries(builds)) {
    const server = await startPortico(paths);
    try {
      const result = { sizes: bundleSizes(paths.site), pages: {} };
      // Cold then warm on one context: the second visit may use what the first cached.
      const { context, page, cdp } = await newWatchedContext(browser);
      result.cold = await visit(page, cdp, `${server.origin}/crds`);
      result.warm = await visit(page, cdp, `${server.origin}/crds`);
      await context.close();
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
  for (const ext of ['wasm', 'js', 'css']) {
    const s = r.sizes[ext];
    if (s) console.log(`| ${build} | ${s.name} | ${kb(s.raw)} | ${kb(s.gzip)} | ${kb(s.brotli)} | ${s.precompressed ? 'yes' : 'no'} |`);
  }
  const code = ['wasm', 'js'].map((e) => r.sizes[e]).filter(Boolean);
  console.log(`| ${build} | wasm + JS | ${kb(code.reduce((a, s) => a + s.raw, 0))} | ${kb(code.reduce((a, s) => a + s.gzip, 0))} | ${kb(code.reduce((a, s) => a + s.brotli, 0))} | |`);
}
console.log('\n| build | bytes on the wire, first visit | second visit | ' +
  Object.keys(pages).map((p) => `hydrated: ${p}, median / worst`).join(' | ') + ' |');
console.log('|---|---|---|' + Object.keys(pages).map(() => '---|').join(''));
for (const [build, r] of Object.entries(results)) {
  console.log(`| ${build} | ${kb(r.cold.bytes)} | ${kb(r.warm.bytes)} | ` +
    Object.values(r.pages).map((p) => `${p.median.toFixed(0)} / ${p.worst.toFixed(0)} ms`).join(' | ') + ' |');
}
