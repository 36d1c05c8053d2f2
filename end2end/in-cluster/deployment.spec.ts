// What the deployment promises, checked on the running Pods rather than the manifests:
// non-root, read-only root filesystem, each Deployment with its own ServiceAccount's
// token, one reconciler leading by its Lease, and the PodDisruptionBudget keeping a
// portal replica through a drain (kubectl drain evicts; a refused eviction is a 429).
import { test, expect } from '../tests/fixtures';
import { Kube } from '../tests/kube';

const pods = (component: string) =>
  `/api/v1/namespaces/portico/pods?labelSelector=app.kubernetes.io/component%3D${component}`;

async function readyPortalPods(kube: Kube): Promise<string[]> {
  return (await kube.ok('GET', pods('server'))).items
    .filter(
      (p: any) =>
        !p.metadata.deletionTimestamp && p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((p: any) => p.metadata.name);
}

test('the Pods run non-root on a read-only root filesystem with their own accounts; one reconciler leads', async () => {
  const kube = new Kube();
  for (const [component, account] of [
    ['server', 'portico-portal'],
    ['reconciler', 'portico-reconciler'],
  ]) {
    const items = (await kube.ok('GET', pods(component))).items;
    expect(items).toHaveLength(2);
    for (const pod of items) {
      expect(pod.spec.serviceAccountName).toBe(account);
      expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
      expect(pod.spec.securityContext.runAsUser).toBe(65532);
      expect(pod.spec.containers[0].securityContext.readOnlyRootFilesystem).toBe(true);
      expect(pod.spec.containers[0].image).toBe('portico.local/portico:dev');
      expect(pod.status.phase).toBe('Running');
    }
  }
  const lease = await kube.ok('GET', '/apis/coordination.k8s.io/v1/namespaces/portico/leases/portico-reconciler');
  const reconcilers = (await kube.ok('GET', pods('reconciler'))).items.map((p: any) => p.metadata.name);
  expect(reconcilers).toContain(lease.spec.holderIdentity);
});

test('a drain keeps one portal replica: the disruption budget refuses the second eviction', async () => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const [first, second] = await readyPortalPods(kube);
  const evict = (name: string) =>
    kube.request('POST', `/api/v1/namespaces/portico/pods/${name}/eviction`, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace: 'portico' },
    });
  expect((await evict(first)).status).toBe(201);
  const refused = await evict(second);
  expect(refused.status).toBe(429);
  expect(JSON.stringify(refused.body)).toContain('disruption budget');
  // The replacement comes up, and the budget allows a disruption again.
  await expect.poll(async () => (await readyPortalPods(kube)).length, { timeout: 120_000 }).toBe(2);
  await expect
    .poll(async () => (await kube.ok('GET', '/apis/policy/v1/namespaces/portico/poddisruptionbudgets/portico')).status.disruptionsAllowed, {
      timeout: 30_000,
    })
    .toBe(1);
});
