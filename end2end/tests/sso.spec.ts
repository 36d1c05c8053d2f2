// Single sign-on through a real identity provider: Dex's own login page, the API
// server trusting Dex (claims prefixed `oidc:`), and each person acting as
// themselves, so RBAC bound to the provider's groups decides everything.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures';
import { Kube } from './kube';
import { ExtraPortico, freePort } from './spawn';

const providerFile = join(__dirname, '..', '.state', 'identity-provider.json');
type Provider = {
  issuer: string; caFile: string; clientId: string; untrustedClientId: string; password: string; idTokenLifetime: string;
};
const provider: Provider | null = existsSync(providerFile) ? JSON.parse(readFileSync(providerFile, 'utf8')) : null;

// The browser reaches Dex over TLS signed by the local cluster's CA, which Chromium
// does not know; Portico and the API server verify Dex against that CA.
test.use({ ignoreHTTPSErrors: true });
test.skip(!provider, 'needs the local cluster with its identity provider (serve.sh without KUBECONFIG)');

const crds = (ns: string) => `/apis/iksoon.test.com/v1/namespaces/${ns}/crdplural`;
const listPath = (ns: string) => `/r/iksoon.test.com/v1/crdplural?ns=${ns}`;
/** A JWT's first characters: no token may show in a page, a URL or a log line. */
const JWT = 'eyJ';

let portico: ExtraPortico;
let ns: string;

test.beforeAll(async () => {
  if (!provider) return;
  const kube = new Kube();
  ns = await kube.freshNamespace('team');
  const bind = async (name: string, group: string, role: { kind: string; name: string }) =>
    kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    });
  for (const [name, verbs] of [['crd-edit', ['*']], ['crd-view', ['get', 'list', 'watch']]] as const) {
    await kube.ok('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      metadata: { name },
      rules: [{ apiGroups: ['iksoon.test.com'], resources: ['crdplural'], verbs }],
    });
  }
  // Groups as the API server names them: the provider's, prefixed.
  await bind('dev-edit', 'oidc:dev', { kind: 'ClusterRole', name: 'edit' });
  await bind('dev-crd-edit', 'oidc:dev', { kind: 'Role', name: 'crd-edit' });
  await bind('viewers-view', 'oidc:viewers', { kind: 'ClusterRole', name: 'view' });
  await bind('viewers-crd-view', 'oidc:viewers', { kind: 'Role', name: 'crd-view' });
  await kube.ok('POST', crds(ns), {
    apiVersion: 'iksoon.test.com/v1', kind: 'CrdKind',
    metadata: { name: 'seeded' }, spec: { choice: 'mysql', replicas: 1 },
  });
  portico = await ExtraPortico.start((origin) => ({
    PORTICO_IDENTITY: 'oidc',
    PORTICO_OIDC_ISSUER: provider!.issuer,
    PORTICO_OIDC_CLIENT_ID: provider!.clientId,
    PORTICO_OIDC_CA_FILE: provider!.caFile,
    PORTICO_OIDC_REDIRECT_URL: `${origin}/auth/callback`,
  }));
});

test.afterAll(() => {
  if (!portico) return;
  portico.stop();
  expect(portico.logs).toContain('verb="sign-in" via="oidc" result="ok"');
  expect(portico.logs, 'no token in the logs').not.toContain(JWT);
});

/** Signs `who` in through Dex's login page, starting from `path`; lands on `path`. */
async function signIn(page: Page, who: string, path: string, shots = false) {
  await page.goto(`${portico.origin}${path}`);
  await expect(page).toHaveURL(/\/login\?then=/);
  if (shots) await page.screenshot({ path: 'test-results/sso-1-portico.png' });
  await page.getByTestId('sso-sign-in').click();
  await page.locator('input[name=login]').fill(`${who}@example.com`);
  await page.locator('input[name=password]').fill(provider!.password);
  if (shots) await page.screenshot({ path: 'test-results/sso-2-provider.png' });
  await page.locator('button[type=submit]').click();
  await expect(page).toHaveURL(`${portico.origin}${path}`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.getByTestId('signed-in-as')).toHaveText(`oidc:${who}@example.com`);
}

test('Ada of group dev signs in through the provider and creates in her team', async ({ page }) => {
  const urls: string[] = [];
  page.on('framenavigated', (frame) => urls.push(frame.url()));
  await signIn(page, 'ada', listPath(ns), true);
  await expect(page.locator('tr[data-name="seeded"]')).toHaveCount(1);
  await page.screenshot({ path: 'test-results/sso-3-signed-in.png' });
  await page.getByTestId('create-link').click();
  await page.locator('#f-metadata-name').fill('by-ada');
  await page.locator('#f-spec-choice').fill('tomcat');
  await page.locator('#f-spec-replicas').fill('2');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/iksoon.test.com/v1/crdplural/${ns}/by-ada$`));
  const created = await new Kube().ok('GET', `${crds(ns)}/by-ada`);
  expect(created.spec).toEqual({ choice: 'tomcat', replicas: 2 });

  const cookies = await page.context().cookies(portico.origin);
  expect(cookies.map((c) => c.name).sort()).toEqual(['__Host-portico_session']);
  expect(cookies[0].httpOnly && cookies[0].secure && cookies[0].sameSite === 'Strict').toBe(true);
  expect(await page.content()).not.toContain(JWT);
  for (const url of urls) expect(url, 'no token in a URL').not.toContain(JWT);
});

test('Bob of group viewers reads, and the disabled buttons say why', async ({ page }) => {
  await signIn(page, 'bob', listPath(ns));
  await expect(page.locator('tr[data-name="seeded"]')).toHaveCount(1);
  const create = page.getByTestId('create-link');
  await expect(create).toHaveAttribute('aria-disabled', 'true');
  await expect(create).toHaveAttribute('title', /permissions do not allow/);
  await page.goto(`${portico.origin}/r/iksoon.test.com/v1/crdplural/${ns}/seeded`);
  await expect(page.getByTestId('object-name')).toHaveText('seeded');
  await expect(page.getByTestId('edit-link')).toHaveAttribute('aria-disabled', 'true');
  await page.screenshot({ path: 'test-results/sso-4-bob-reads.png' });
});

test('Eve, in no group, is refused everything with a sentence', async ({ page }) => {
  await signIn(page, 'eve', listPath(ns));
  await expect(page.getByText(`oidc:eve@example.com may not watch crdplural in namespace ${ns}`)).toBeVisible();
  await expect(page.locator('tr[data-name="seeded"]')).toHaveCount(0);
  await expect(page.getByTestId('create-link')).toHaveAttribute('aria-disabled', 'true');
  await page.screenshot({ path: 'test-results/sso-5-eve-refused.png' });
  await page.goto(`${portico.origin}/r/iksoon.test.com/v1/crdplural/${ns}/seeded`);
  await expect(page.locator('.error-banner, [role=alert]').first()).toContainText(/may not|forbidden|Forbidden/);
});

test('an ID token past its lifetime is renewed without the person noticing', async ({ page }) => {
  test.setTimeout(150_000);
  const lifetime = parseInt(provider!.idTokenLifetime, 10) * 1000;
  // The close codes of the page's sockets: renewing closes the socket with 4001.
  await page.addInitScript(() => {
    const Native = window.WebSocket;
    (window as any).__closeCodes = [];
    (window as any).WebSocket = class extends Native {
      constructor(url: string | URL, protocols?: string | string[]) {
        super(url, protocols);
        this.addEventListener('close', (e) => (window as any).__closeCodes.push(e.code));
      }
    };
  });
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await signIn(page, 'ada', listPath(ns));
  const signedIn = Date.now();
  const cookieValue = async () =>
    (await page.context().cookies(portico.origin)).find((c) => c.name === '__Host-portico_session')?.value;
  const first = await cookieValue();
  await expect(page.locator('.badge').first()).toHaveText('Live');
  // The page stays live through the renewal: its socket is closed to renew and
  // reopened at once, so the badge never says it reconnects.
  const badges = new Set<string>();
  const watcher = setInterval(async () => {
    badges.add((await page.locator('.badge').first().textContent().catch(() => null)) ?? '');
  }, 200);
  try {
    // Waiting for the token's lifetime to pass is the behaviour under test.
    await expect
      .poll(() => Date.now() - signedIn, { timeout: lifetime + 30_000, intervals: [1_000] })
      .toBeGreaterThan(lifetime + 5_000);
    const kube = new Kube();
    const created = Date.now();
    await kube.ok('POST', crds(ns), {
      apiVersion: 'iksoon.test.com/v1', kind: 'CrdKind',
      metadata: { name: 'after-expiry' }, spec: { choice: 'mysql', replicas: 1 },
    });
    await expect(page.locator('tr[data-name="after-expiry"]')).toHaveCount(1);
    console.log(`figure: a change made ${Math.round((created - signedIn) / 1000)} s after sign-in (token lifetime ${lifetime / 1000} s) showed in ${Date.now() - created} ms`);
  } finally {
    clearInterval(watcher);
  }
  expect([...badges].filter((b) => b && b !== 'Live'), 'the live badge never changed').toEqual([]);
  expect(await cookieValue(), 'the session carries a renewed token').not.toEqual(first);
  // The socket was closed to renew (4001) and a new one opened in its place.
  expect(await page.evaluate(() => (window as any).__closeCodes)).toContain(4001);
  expect(sockets.filter((url) => url.endsWith('/api/live')).length).toBeGreaterThanOrEqual(2);
  // Writing works too (a server function with the renewed token).
  await page.goto(`${portico.origin}/r/iksoon.test.com/v1/crdplural/${ns}/after-expiry`);
  await expect(page.getByTestId('object-name')).toHaveText('after-expiry');
  await expect(page.getByTestId('edit-link')).not.toHaveAttribute('aria-disabled', 'true');
  const renewals = [...portico.logs.matchAll(/verb="refresh" result="ok" elapsed_ms=(\d+)/g)].map((m) => Number(m[1]));
  expect(renewals.length).toBeGreaterThan(0);
  console.log(`figure: ID token renewals at the provider took ${renewals.join(', ')} ms`);
});

test('eight requests arriving at once with a token that is due renew it once at the provider', async ({ page }) => {
  test.setTimeout(120_000);
  const lifetime = parseInt(provider!.idTokenLifetime, 10) * 1000;
  await signIn(page, 'ada', listPath(ns));
  const signedIn = Date.now();
  const cookie = (await page.context().cookies(portico.origin)).find((c) => c.name === '__Host-portico_session')!.value;
  // No page renews it meanwhile.
  await page.goto('about:blank');
  const refreshes = () => [...portico.logs.matchAll(/verb="refresh" result="ok"/g)].length;
  // Due once half its lifetime has passed (Portico renews ahead of expiry), not expired yet.
  await expect
    .poll(() => Date.now() - signedIn, { timeout: lifetime, intervals: [1_000] })
    .toBeGreaterThan(lifetime / 2 + 3_000);
  const before = refreshes();
  const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${portico.origin}/api/signed-in-as`, {
    method: 'POST',
    headers: { cookie: `__Host-portico_session=${cookie}` },
  })));
  expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
  for (const answer of answers) {
    expect(await answer.text()).toContain('oidc:ada@example.com');
    expect(answer.headers.get('set-cookie') ?? '', 'each gets the renewed session').toContain('__Host-portico_session=');
  }
  expect(refreshes() - before, 'the provider was asked once').toBe(1);
});

test('sign-out ends the session, its live views in other tabs, and the back button shows nothing', async ({ page }) => {
  await signIn(page, 'ada', listPath(ns));
  await expect(page.locator('tr[data-name="seeded"]')).toHaveCount(1);
  const other = await page.context().newPage();
  await other.goto(`${portico.origin}${listPath(ns)}`);
  await expect(other.locator('tr[data-name="seeded"]')).toHaveCount(1);
  const session = (await page.context().cookies(portico.origin)).find((c) => c.name === '__Host-portico_session')!.value;

  const clicked = Date.now();
  await page.getByTestId('sign-out').click();
  // Portico's session ends, then the provider's: Dex offers RP-initiated logout, and
  // without the ID token in the URL (no hint) it asks the person to confirm.
  await expect(page).toHaveURL(new RegExp(`^${provider!.issuer}/logout\\?client_id=portico$`));
  const signedOut = Date.now() - clicked;
  await expect(other.getByText('Your sign-in ended')).toBeVisible();
  console.log(`figure: sign-out answered in ${signedOut} ms (at the provider's sign-out); the other tab's live view ended ${Date.now() - clicked} ms after the click`);
  await other.screenshot({ path: 'test-results/sso-6-other-tab-signed-out.png' });
  await page.screenshot({ path: 'test-results/sso-7-provider-sign-out.png' });
  await page.getByRole('button', { name: 'Log Out' }).click();
  await expect(page.getByRole('button', { name: 'Log Out' })).toHaveCount(0);

  // Back, past the provider's pages, to Portico's: the sign-in page, nothing else.
  for (let i = 0; i < 4 && !page.url().startsWith(portico.origin); i++) {
    await page.goBack();
  }
  await expect(page).toHaveURL(/\/login\?then=/);
  await expect(page.locator('tr[data-name="seeded"]')).toHaveCount(0);
  await page.screenshot({ path: 'test-results/sso-8-back-button.png' });
  // The provider's session ended too: signing in again asks for the password.
  await page.getByTestId('sso-sign-in').click();
  await expect(page.locator('input[name=password]')).toBeVisible();

  // A copy of the cookie taken before sign-out opens nothing either.
  const replay = await fetch(`${portico.origin}/api/signed-in-as`, {
    method: 'POST',
    headers: { cookie: `__Host-portico_session=${session}` },
  });
  expect(replay.status).toBe(401);
});

test('a provider the API server does not trust, or one that is down, gets a sentence, not a session', async ({ page }) => {
  // Dex knows this client; the API server's authentication configuration does not list it.
  const untrusted = await ExtraPortico.start((origin) => ({
    PORTICO_IDENTITY: 'oidc',
    PORTICO_OIDC_ISSUER: provider!.issuer,
    PORTICO_OIDC_CLIENT_ID: provider!.untrustedClientId,
    PORTICO_OIDC_CA_FILE: provider!.caFile,
    PORTICO_OIDC_REDIRECT_URL: `${origin}/auth/callback`,
  }));
  try {
    await page.goto(`${untrusted.origin}/crds`);
    await page.getByTestId('sso-sign-in').click();
    await page.locator('input[name=login]').fill('ada@example.com');
    await page.locator('input[name=password]').fill(provider!.password);
    await page.locator('button[type=submit]').click();
    await expect(page.getByRole('alert')).toContainText(
      `The Kubernetes API server does not accept sign-ins from ${provider!.issuer}`,
    );
    await page.screenshot({ path: 'test-results/sso-9-untrusted.png' });
    expect((await page.context().cookies(untrusted.origin)).map((c) => c.name)).not.toContain('__Host-portico_session');
  } finally {
    untrusted.stop();
  }

  // An issuer nobody answers at (a closed loopback port, not a fixed one something
  // may listen on).
  const issuer = `https://127.0.0.1:${await freePort()}/dex`;
  const down = await ExtraPortico.start((origin) => ({
    PORTICO_IDENTITY: 'oidc',
    PORTICO_OIDC_ISSUER: issuer,
    PORTICO_OIDC_CLIENT_ID: provider!.clientId,
    PORTICO_OIDC_REDIRECT_URL: `${origin}/auth/callback`,
  }));
  try {
    await page.goto(`${down.origin}/crds`);
    await page.getByTestId('sso-sign-in').click();
    await expect(page.getByRole('alert')).toContainText(
      `the identity provider at ${issuer} cannot be reached or is misconfigured`,
    );
    await expect(page).toHaveURL(new RegExp(`^${down.origin}/auth/start`));
    await page.screenshot({ path: 'test-results/sso-10-provider-down.png' });
  } finally {
    down.stop();
  }
});
