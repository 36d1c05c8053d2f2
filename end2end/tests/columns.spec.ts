// Kubernetes' own kinds print exactly what `kubectl get` and `kubectl get -o wide`
// print: every kind discovery serves (every served version) that holds an object in
// the scope looked at, every row, every column. Found at run time, so a kind the next
// Kubernetes adds is compared without anyone listing it here.
import { test, expect } from './fixtures';
import { Kube } from './kube';
import { expectKubectlTable } from './kubectl';

// Left out, and why: Events are a stream, not a state (in a busy namespace the list is
// never the same twice); ComponentStatus is deprecated and probes fixed local ports;
// the metrics API's PodMetrics and NodeMetrics cannot be watched (no live table: their
// figures are on the Pod, node and workload pages and in a Pod table's usage columns)
// and change with every measurement.
const NOT_COMPARED = new Set([
  'events',
  'events.events.k8s.io',
  'componentstatuses',
  'pods.metrics.k8s.io',
  'nodes.metrics.k8s.io',
]);

type Served = { resource: string; path: (ns?: string) => string; namespaced: boolean };

/** Every built-in resource discovery serves with a `list` verb, each served version. */
async function builtIns(kube: Kube): Promise<Served[]> {
  const crds = await kube.ok('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
  const crdGroups = new Set<string>(crds.items.map((c: any) => c.spec.group));
  const served: Served[] = [];
  const add = (group: string, version: string, list: any) => {
    for (const r of list.resources) {
      if (r.name.includes('/') || !r.verbs.includes('list')) continue;
      const resource = group ? `${r.name}.${version}.${group}` : r.name;
      if (NOT_COMPARED.has(group ? `${r.name}.${group}` : r.name)) continue;
      const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
      served.push({
        resource,
        namespaced: r.namespaced,
        path: (ns?: string) => `${prefix}${r.namespaced && ns ? `/namespaces/${ns}` : ''}/${r.name}`,
      });
    }
  };
  add('', 'v1', await kube.ok('GET', '/api/v1'));
  const groups = await kube.ok('GET', '/apis');
  for (const group of groups.groups) {
    if (crdGroups.has(group.name)) continue;
    for (const { version } of group.versions) add(group.name, version, await kube.ok('GET', `/apis/${group.name}/${version}`));
  }
  return served;
}

async function compareScope(page: any, origin: string, namespace?: string) {
  const kube = new Kube();
  const served = (await builtIns(kube)).filter((s) => s.namespaced === Boolean(namespace));
  const compared: string[] = [];
  for (const s of served) {
    const some = await kube.ok('GET', `${s.path(namespace)}?limit=1`);
    if (some.items.length === 0) continue;
    for (const wide of [false, true]) await expectKubectlTable(page, origin, { resource: s.resource, namespace, wide });
    compared.push(s.resource);
  }
  console.log(`compared with kubectl (${namespace ?? 'cluster-scoped'}): ${compared.join(', ')}`);
  // Something to compare, or the check proves nothing.
  expect(compared.length, 'kinds with objects to compare').toBeGreaterThan(3);
}

test.describe.configure({ mode: 'serial' });

test("every cluster-scoped built-in kind prints kubectl get's and kubectl get -o wide's table", async ({ page, baseURL }) => {
  test.setTimeout(600_000);
  await compareScope(page, baseURL!);
});

for (const namespace of ['kube-system', 'default']) {
  test(`every built-in kind in ${namespace} prints kubectl get's and kubectl get -o wide's table`, async ({ page, baseURL }) => {
    test.setTimeout(600_000);
    await compareScope(page, baseURL!, namespace);
  });
}

// The kinds people list most, with something in them: a Deployment (its ReplicaSet and
// a Pod running on the real node), a Service (its Endpoints and EndpointSlice), a
// Secret, in a namespace of the test's own.
test('every built-in kind of a running workload prints kubectl get\'s and kubectl get -o wide\'s table', async ({ page, baseURL }) => {
  test.setTimeout(600_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('columns');
  const labels = { app: 'web' };
  // A fresh namespace's default ServiceAccount, which admission wants, comes shortly.
  await expect
    .poll(async () => (await kube.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      metadata: { name: 'web', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'web', image: 'portico.local/pause:3.10', imagePullPolicy: 'Never' }] },
        },
      },
    })).status)
    .toBe(201);
  await kube.ok('POST', `/api/v1/namespaces/${ns}/services`, {
    metadata: { name: 'web' },
    spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
  });
  await kube.ok('POST', `/api/v1/namespaces/${ns}/secrets`, { metadata: { name: 'web' }, stringData: { key: 'value' } });
  await expect
    .poll(async () => (await kube.ok('GET', `/apis/apps/v1/namespaces/${ns}/deployments/web`)).status?.readyReplicas ?? 0, {
      timeout: 120_000,
    })
    .toBe(1);
  await compareScope(page, baseURL!, ns);
});
