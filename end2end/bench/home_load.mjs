// The home page in the browser for a person who reads 50 namespaces of 100 Pods each
// (and in each a Deployment short of its replicas), signed in with their own token, in
// the release build: from navigation start to hydrated, to the first summary on screen
// (the Pods section) and to the complete one (every Pod counted), cold (a Portico just
// started, nothing followed yet) and warm (the same person's next visit). In the same
// run, the floor: kubectl as that person reading Pods, Deployments, StatefulSets,
// DaemonSets and Events in each namespace, 8 namespaces at a time.
//
//   cargo build --workspace && bash scripts/release.sh
//   target/debug/portico-control-plane --nodes simulated exec -- node end2end/bench/home_load.mjs
//   # BENCH_NAMESPACES (50), BENCH_PODS (100 per namespace), BENCH_RUNS (3)
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { builds, launchChromium, startPortico } from './portico.mjs';

if (!process.env.KUBECONFIG) {
  console.error('KUBECONFIG is not set: run this under portico-control-plane exec (see the top of this file)');
  process.exit(2);
}
const namespaces = Number(process.env.BENCH_NAMESPACES ?? 50);
const podsEach = Number(process.env.BENCH_PODS ?? 100);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const root = join(import.meta.dirname, '..', '..');
const kubectlPath = execFileSync('bash', [join(root, 'end2end', 'kubernetes', 'build.sh'), 'kubectl'], { encoding: 'utf8' }).trim();
const kubectl = (args, input) => execFileSync(kubectlPath, args, { encoding: 'utf8', input, maxBuffer: 1 << 28 });
const names = Array.from({ length: namespaces }, (_, i) => `home-bench-${i}`);

// The cluster: the namespaces, their workloads, and a person who may read them (and
// list namespaces, so that Portico finds theirs), nothing cluster-wide.
const deployment = (ns, name, replicas, pod = {}) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns },
  spec: {
    replicas, selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'web', image: 'bench/web:1' }], ...pod } },
  },
});
// Simulated nodes enough for every Pod (110 each, as a kubelet takes by default).
const nodeCount = Math.ceil((namespaces * podsEach) / 110);
const capacity = { cpu: '16', memory: '32Gi', pods: '110', 'ephemeral-storage': '100Gi' };
const items = Array.from({ length: nodeCount }, (_, i) => ({
  apiVersion: 'v1', kind: 'Node',
  metadata: {
    name: `home-bench-node-${i}`,
    annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
    labels: { type: 'kwok', 'kubernetes.io/hostname': `home-bench-node-${i}`, 'kubernetes.io/os': 'linux' },
  },
  status: { allocatable: capacity, capacity, phase: 'Running' },
}));
items.push(
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader', namespace: 'default' } },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'bench-home-namespaces' },
    rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }] },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'bench-home-namespaces' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-home-namespaces' },
    subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'default' }] },
);
for (const ns of names) {
  items.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
}
for (const ns of names) {
  items.push(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'bench-reader', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'default' }] },
    deployment(ns, 'web', podsEach),
    // No node takes these: a workload short of its replicas, Pods not ready, Warnings.
    deployment(ns, 'stuck', 2, { nodeSelector: { 'bench.example/nowhere': 'true' } }),
  );
}
kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
const total = namespaces * (podsEach + 2);
const wanted = namespaces * podsEach;
for (const deadline = Date.now() + 900_000; ;) {
  const running = kubectl(['get', 'pods', '-A', '-l', 'app=web', '--field-selector=status.phase=Running', '--no-headers', '-o', 'name'])
    .split('\n').filter(Boolean).length;
  if (running >= wanted) break;
  if (Date.now() > deadline) throw new Error(`only ${running} of ${wanted} Pods running after 15 minutes`);
  await new Promise((r) => setTimeout(r, 2000));
}
const token = kubectl(['create', 'token', 'reader', '-n', 'default', '--duration=2h']).trim();

// The floor: kubectl with the person's token (a kubeconfig of their own: the admin's
// client certificate would otherwise win).
const admin = JSON.parse(kubectl(['config', 'view', '--raw', '--minify', '-o', 'json']));
const personConfig = join(mkdtempSync(join(tmpdir(), 'home-bench-')), 'kubeconfig.json');
writeFileSync(personConfig, JSON.stringify({
  apiVersion: 'v1', kind: 'Config', 'current-context': 'person',
  clusters: [{ name: 'c', cluster: admin.clusters[0].cluster }],
  users: [{ name: 'person', user: { token } }],
  contexts: [{ name: 'person', context: { cluster: 'c', user: 'person' } }],
}));
const run = promisify(execFile);
async function floor() {
  const started = performance.now();
  let rows = 0;
  const queue = [...names];
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let ns = queue.shift(); ns; ns = queue.shift()) {
      const { stdout } = await run(kubectlPath, ['--kubeconfig', personConfig, 'get',
        'pods,deployments,statefulsets,daemonsets,events', '-n', ns, '--no-headers'], { maxBuffer: 1 << 26 });
      rows += stdout.split('\n').filter(Boolean).length;
    }
  }));
  return { ms: performance.now() - started, rows };
}

const thousands = (n) => n.toLocaleString('en-US');
const complete = `of ${thousands(total)} Pods`;

async function newContext(browser) {
  const context = await browser.newContext();
  // Times from navigation start: hydrated, the Pods section first shown, and shown
  // counting every Pod.
  await context.addInitScript((want) => {
    const look = () => {
      if (document.body?.dataset.hydrated === 'true') window.__hydratedAt ??= performance.now();
      const pods = document.querySelector('[data-testid="home-pods"]');
      if (pods) {
        window.__firstAt ??= performance.now();
        if (pods.textContent.includes(want)) window.__completeAt ??= performance.now();
      }
    };
    new MutationObserver(look).observe(document, { attributes: true, childList: true, characterData: true, subtree: true });
  }, complete);
  return { context, page: await context.newPage() };
}

async function visitHome(page, origin) {
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => window.__completeAt !== undefined, null, { timeout: 180_000 });
  return page.evaluate(() => ({ hydrated: window.__hydratedAt, first: window.__firstAt, complete: window.__completeAt }));
}

const browser = await launchChromium();
const results = { cold: [], warm: [], floor: [] };
try {
  for (let i = 0; i < runs; i++) {
    results.floor.push(await floor());
    const server = await startPortico(builds.release, { PORTICO_IDENTITY: 'token' });
    try {
      const { context, page } = await newContext(browser);
      await page.goto(`${server.origin}/login?then=%2Fcrds`);
      await page.locator('#token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/crds$/);
      results.cold.push(await visitHome(page, server.origin));
      results.warm.push(await visitHome(page, server.origin));
      await context.close();
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  await browser.close();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (xs) => `${median(xs).toFixed(0)} / ${Math.max(...xs).toFixed(0)} ms`;
console.log(`\n${namespaces} namespaces, ${thousands(total)} Pods, ${runs} runs (median / worst), release build\n`);
console.log('| path | hydrated | first summary on screen | complete (every Pod counted) |');
console.log('|---|---|---|---|');
console.log(`| floor: kubectl as the person, 5 kinds in each namespace, 8 at a time | — | — | ${ms(results.floor.map((f) => f.ms))} (${results.floor[0].rows} rows) |`);
for (const kind of ['cold', 'warm']) {
  const r = results[kind];
  console.log(`| Portico, ${kind} | ${ms(r.map((x) => x.hydrated))} | ${ms(r.map((x) => x.first))} | ${ms(r.map((x) => x.complete))} |`);
}
