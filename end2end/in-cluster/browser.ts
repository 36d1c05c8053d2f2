// What the in-cluster specs share: the browser pointed at the Ingress (portico.test is
// the real node's address, whose certificate the test CA issued), signing in, and a
// person with their own token.
import { expect, type Page } from '@playwright/test';
import { chromiumArgs, chromiumPath } from '../chromium';
import type { Kube } from '../tests/kube';

// Set once serve.sh has printed them (the webServer's named groups); the files are
// also loaded before it starts, to list the tests.
const ip = process.env.PORTICO_INGRESS_IP ?? '127.0.0.1';
const spki = process.env.PORTICO_INGRESS_SPKI ?? '';

export const throughTheIngress = {
  launchOptions: {
    executablePath: chromiumPath,
    args: [
      ...chromiumArgs,
      `--host-resolver-rules=MAP portico.test ${ip}`,
      // Trusts the Ingress's certificate by its key, and nothing else.
      `--ignore-certificate-errors-spki-list=${spki}`,
    ],
  },
};

/** How long serve.sh took from `kubectl apply -k` to the first page through the Ingress. */
export const applyToPageMs = Number(process.env.APPLY_TO_PAGE_MS ?? 'NaN');

/** Signs in at the portal with `token`, as a person would. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.goto('/login');
  await page.locator('#token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).not.toHaveURL(/\/login/);
}

/** A namespace of the person's own, where they may edit and make Stacks; their token. */
export async function person(kube: Kube, prefix: string): Promise<{ ns: string; token: string }> {
  const ns = await kube.freshNamespace(prefix);
  await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'alice' } });
  const subjects = [{ kind: 'ServiceAccount', name: 'alice', namespace: ns }];
  await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    metadata: { name: 'alice-edit' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects,
  });
  await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    metadata: { name: 'stacks' },
    rules: [{ apiGroups: ['portico.dev'], resources: ['stacks', 'stacks/status'], verbs: ['*'] }],
  });
  await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    metadata: { name: 'alice-stacks' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'stacks' },
    subjects,
  });
  const issued = await kube.ok('POST', `/api/v1/namespaces/${ns}/serviceaccounts/alice/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return { ns, token: issued.status.token };
}
