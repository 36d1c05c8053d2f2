import { execFileSync } from 'node:child_process';
import { test, expect } from './fixtures';
import { Kube, holdNodesTo } from './kube';

// Real containers on the local cluster's real node: MariaDB initialises its volume and
// its probe runs every 10 s; Tomcat starts a JVM.
const REAL = { timeout: 180_000 };

const merge = { 'content-type': 'application/merge-patch+json' };

test('provision a MySQL from the catalog, watch it reach Ready and connect with what its page shows', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('prov');
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.locator('.offer')).toHaveCount(2);
  await expect(page.locator('.offer[data-choice="mysql"]')).toContainText('portico.local/mariadb:10.11');
  await page.screenshot({ path: 'test-results/provision.png' });
  await page.locator('.offer[data-choice="mysql"]').getByRole('link', { name: 'Provision MySQL (MariaDB)' }).click();

  // The Provision form: the catalog's fields in words; what the link chose is on it.
  await expect(page).toHaveURL(/\/provision\/new\?spec.choice=mysql$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Provision MySQL (MariaDB)');
  await expect(page.getByTestId('stack-fields')).toBeVisible();
  await expect(page.getByTestId('prefilled')).toHaveCount(0);
  await page.locator('#f-metadata-name').fill('shop-db');
  await page.locator('#f-metadata-namespace').selectOption(ns);
  await page.locator('#f-spec-storage').fill('2Gi');
  await page.getByTestId('exposure-node-port').check();
  await page.screenshot({ path: 'test-results/provision-form.png', fullPage: true });
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/shop-db$`));

  // The reconciler creates the children; the cluster's controllers and scheduler place
  // the StatefulSet's Pod on the real node, whose MariaDB turns Ready when its
  // readiness probe passes; the page follows live: the Pod and its claim appear below
  // the StatefulSet that owns them.
  const children = page.locator('[data-testid="children"]');
  await expect(children.locator('tr[data-child="StatefulSet/shop-db"][data-depth="1"]')).toBeVisible();
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  await expect(page.getByTestId('conditions')).toContainText('AllReplicasReady');
  const pod = children.locator('tr[data-child="Pod/shop-db-0"][data-depth="2"]');
  await expect(pod).toContainText('Running');
  await expect(pod).toContainText('1/1');
  await expect(children.locator('tr[data-child="PersistentVolumeClaim/data-shop-db-0"][data-depth="2"]')).toContainText('Bound');
  await expect(children.locator('tr[data-child="Service/shop-db"]')).toBeVisible();
  await expect(page.getByTestId('stack-connection')).toContainText(`shop-db.${ns}.svc`);
  // Apps connect as their own user; root is named for administrators, its password
  // kept apart.
  await expect(page.getByTestId('stack-user')).toHaveText('app');
  await expect(page.getByTestId('stack-admin')).toContainText('root');
  await expect(page.getByTestId('stack-admin')).toContainText('admin-password');

  // The password only on request, never in the page as served.
  const secret = await kube.ok('GET', `/api/v1/namespaces/${ns}/secrets/shop-db-credentials`);
  const password = Buffer.from(secret.data['app-password'], 'base64').toString();
  const root = Buffer.from(secret.data['admin-password'], 'base64').toString();
  expect(await page.content()).not.toContain(password);
  expect(await page.content()).not.toContain(root);
  await page.getByTestId('reveal-password').click();
  await expect(page.getByTestId('password')).toHaveText(password);
  await expect(page.getByTestId('copy-password')).toBeVisible();
  await page.screenshot({ path: 'test-results/stack-ready.png', fullPage: true });

  // What the page shows opens the database: its node port on the node's address, the
  // user it names, the revealed password (given to the client by environment).
  const shown = await page.getByTestId('password').textContent();
  const nodePort = (await page.getByTestId('node-port').textContent())?.trim() ?? '';
  const user = (await page.getByTestId('stack-user').textContent())?.trim() ?? '';
  const hostIP = (await kube.ok('GET', `/api/v1/namespaces/${ns}/pods/shop-db-0`)).status.hostIP;
  const out = execFileSync(
    'mariadb',
    ['-h', hostIP, '-P', nodePort, '-u', user, '--batch', '--skip-column-names', '-e',
      "CREATE TABLE app.orders (item VARCHAR(32)); INSERT INTO app.orders VALUES ('written by the browser test'); SELECT item FROM app.orders"],
    { env: { ...process.env, MYSQL_PWD: shown ?? '' }, encoding: 'utf8' },
  );
  expect(out.trim()).toBe('written by the browser test');

  // How to connect, beyond host and port: the database, a URL (with the password only
  // once revealed) and a client command; the children's Status cells carry no frozen age.
  await expect(page.getByTestId('stack-database')).toHaveText('app');
  await expect(page.getByTestId('stack-url')).toHaveText(
    `mysql://app:${password}@shop-db.${ns}.svc:3306/app`);
  await expect(page.getByTestId('stack-command')).toHaveText(
    `mysql -h shop-db.${ns}.svc -P 3306 -u app -p app`);
  // Hidden again, the password leaves the page and the URL.
  await page.getByTestId('hide-password').click();
  await expect(page.getByTestId('password')).toHaveCount(0);
  await expect(page.getByTestId('stack-url')).toHaveText(`mysql://app@shop-db.${ns}.svc:3306/app`);
  expect(await page.content()).not.toContain(password);
  await expect(pod).not.toContainText('Age:');

  // A terminal into the database's Pod, as the person: the client in the container
  // reaches its server with the root password the container holds.
  await page.getByTestId('stack-logs').getByTestId('terminal-open').click();
  await expect(page.getByTestId('terminal-status')).toContainText('Running in container');
  await page.getByTestId('terminal-screen').click();
  await page.keyboard.type(`mysql -uroot -p"$MYSQL_ROOT_PASSWORD" -e 'select 1 as answer'`);
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('terminal-screen').locator('.xterm-rows')).toContainText('| answer |');
  await page.screenshot({ path: 'test-results/stack-terminal.png' });
  await page.getByTestId('terminal-close').click();

  // Deleting it asks for its name, and says the data stays (deletionPolicy Retain,
  // the default) and how to get it back.
  await page.getByTestId('delete-button').click();
  const dialog = page.getByTestId('delete-dialog');
  await expect(page.getByTestId('delete-keeps')).toContainText('data-shop-db-0 (2Gi)');
  await expect(page.getByTestId('delete-keeps')).toContainText('Secret shop-db-credentials');
  await expect(page.getByTestId('delete-confirm')).toBeDisabled();
  await page.getByTestId('delete-typed-name').fill('shop-d');
  await expect(page.getByTestId('delete-confirm')).toBeDisabled();
  await page.getByTestId('delete-typed-name').fill('shop-db');
  await page.screenshot({ path: 'test-results/stack-delete-dialog.png', fullPage: true });
  await dialog.getByTestId('delete-confirm').click();
  await expect(page).toHaveURL(/\/r\/portico.dev\/v1alpha1\/stacks$/);

  // The Provision page lists the kept volume; reattaching it is a Stack of the same
  // name, which runs on the kept data with the kept password.
  await expect.poll(() => kube.status(`/apis/apps/v1/namespaces/${ns}/statefulsets/shop-db`)).toBe(404);
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const kept = page.locator(`[data-testid="kept-volumes"] tr[data-kept="data-shop-db-0"]`);
  await expect(kept).toContainText(ns);
  await expect(kept).toContainText('2Gi');
  await page.screenshot({ path: 'test-results/kept-volumes.png', fullPage: true });
  await kept.getByTestId('reattach').click();
  await expect(page.locator('#f-metadata-name')).toHaveValue('shop-db');
  await expect(page.locator('#f-metadata-namespace')).toHaveValue(ns);
  await expect(page.locator('#f-spec-storage')).toHaveValue('2Gi');
  // Taking the kept data over is asked for, in the open: the form shows the choice.
  await expect(page.locator('#f-spec-reattachKeptData')).toBeChecked();
  await expect(page.locator('[data-path="spec.reattachKeptData"]')).toContainText('Take over the data a deleted Stack named shop-db kept');
  await page.screenshot({ path: 'test-results/reattach-form.png', fullPage: true });
  await page.getByTestId('exposure-node-port').check();
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/shop-db$`));
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  const hostAgain = (await kube.ok('GET', `/api/v1/namespaces/${ns}/pods/shop-db-0`)).status.hostIP;
  const portAgain = (await page.getByTestId('node-port').textContent())?.trim() ?? '';
  // kube-proxy writes the new NodePort's rules after the endpoints change, with no
  // event to wait on: ask until it answers.
  const read = () => {
    try {
      return execFileSync(
        'mariadb',
        ['-h', hostAgain, '-P', portAgain, '-u', user, '--batch', '--skip-column-names',
          '--connect-timeout=5', '-e', 'SELECT item FROM app.orders'],
        { env: { ...process.env, MYSQL_PWD: shown ?? '' }, encoding: 'utf8', stdio: 'pipe' },
      ).trim();
    } catch (e) {
      return String(e);
    }
  };
  await expect.poll(read, { timeout: 30_000 }).toBe('written by the browser test');
});

test('the Provision form asks only what applies, says its rules in words, and starts where the person works', async ({ page }) => {
  const kube = new Kube();
  const ns = await kube.freshNamespace('people');
  // Looking at a namespace's list is working there: the form starts in it, not `default`.
  await page.goto(`/r/portico.dev/v1alpha1/stacks?ns=${ns}`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.locator('.offer[data-choice="tomcat"]').getByRole('link', { name: 'Provision Tomcat' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Provision Tomcat');
  await expect(page.getByTestId('stack-fields')).toBeVisible();
  await expect(page.locator('#f-metadata-namespace')).toHaveValue(ns);
  // A Tomcat keeps no data: no volume, nothing about what deleting does to it.
  await expect(page.locator('#f-spec-storage')).toHaveCount(0);
  await expect(page.getByTestId('deletion-retain')).toHaveCount(0);
  await expect(page.getByTestId('exposure-cluster')).toBeChecked();

  await page.goto('/provision/new?spec.choice=mysql');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.locator('#f-metadata-namespace')).toHaveValue(ns);
  // The name's rule, as the CRD says it, before anything is typed.
  await expect(page.getByTestId('name-rule')).toHaveText(
    "A Stack's name starts with a letter, uses lowercase letters, digits and '-', and has at most 52 characters.");
  // The volume: empty means the plan's size, and its rule is said in words.
  const size = page.locator('[data-path="spec.storage"]');
  await expect(page.locator('#f-spec-storage')).toHaveAttribute('placeholder', '1Gi');
  await expect(size).toContainText("Empty: the plan's 1Gi.");
  await page.locator('#f-spec-storage').fill('2GB');
  await expect(size.locator('.field-error')).toHaveText('Write a whole number, then Mi, Gi or Ti: 20Gi, for example.');
  await expect(page.locator('form')).not.toContainText('[0-9]');
  await page.locator('#f-spec-storage').fill('2Gi');
  await expect(size.locator('.field-error')).toHaveCount(0);
  await page.locator('#f-metadata-name').fill('orders');
  await page.getByTestId('deletion-delete').check();
  await page.screenshot({ path: 'test-results/provision-form-mysql.png', fullPage: true });

  // All fields: the generic form, on the same object; its help is whole and its empty
  // choices say what empty means.
  await page.getByTestId('all-fields').click();
  await expect(page.locator('#f-spec-storage')).toHaveValue('2Gi');
  await expect(page.locator('#f-spec-deletionPolicy')).toHaveValue('"Delete"');
  await expect(page.locator('.field[data-path="spec.storage"] .field-help').first()).toContainText('e.g. 1Gi.');
  await expect(page.locator('#f-spec-exposure option[value=""]')).toHaveText('(not set: ClusterIP by default)');
  await expect(page.getByTestId('field-search')).toBeVisible();
  await page.screenshot({ path: 'test-results/provision-form-all-fields.png', fullPage: true });
  await page.getByTestId('all-fields').click();
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/orders$`));
  const made = await kube.ok('GET', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks/orders`);
  expect(made.spec).toMatchObject({ choice: 'mysql', storage: '2Gi', deletionPolicy: 'Delete', replicas: 1, exposure: 'ClusterIP' });
  // Its MariaDB is not what this test is about: the real node is kept free.
  await kube.ok('DELETE', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks/orders`);
});

test('a Stack no node can hold says why on its page, live, and turns Ready when it asks for less', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('sched');
  const stacks = `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`;
  // Within the catalog's ceiling (4 CPUs), beyond the node: held to 2 CPUs, so that
  // this holds on a machine of any size (a real node offers all of its CPUs).
  const release = await holdNodesTo(kube, ns, 2);
  try {
    await kube.ok('POST', stacks, {
      apiVersion: 'portico.dev/v1alpha1', kind: 'Stack',
      metadata: { name: 'big' },
      spec: { choice: 'mysql', resources: { requests: { cpu: '3' } } },
    });
    await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/big`);
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
    // A Pod the scheduler cannot place shows once it has been so for 5 s (scheduling::GRACE).
    await expect(page.getByTestId('stack-phase')).toHaveText('Degraded', { timeout: 60_000 });
    // The scheduler's own words, in the conditions and in the Events.
    await expect(page.getByTestId('conditions')).toContainText('Unschedulable');
    await expect(page.getByTestId('conditions')).toContainText('Pod big-0 cannot be placed: 0/1 nodes are available: 1 Insufficient cpu');
    await expect(page.locator('[data-testid="children"] tr[data-child="Pod/big-0"]')).toContainText('Pending');
    await page.screenshot({ path: 'test-results/stack-unschedulable.png', fullPage: true });

    await kube.ok('PATCH', `${stacks}/big`, { spec: { resources: { requests: { cpu: '250m' } } } }, merge);
    await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
    await expect(page.locator('[data-testid="children"] tr[data-child="Pod/big-0"]')).toContainText('Running');
  } finally {
    await release();
  }
});

test('deleting a Stack from its page removes everything it owned', async ({ page }) => {
  test.setTimeout(300_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('gc');
  const stacks = `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`;
  await kube.ok('POST', stacks, {
    apiVersion: 'portico.dev/v1alpha1', kind: 'Stack',
    metadata: { name: 'shop' }, spec: { choice: 'tomcat', replicas: 2 },
  });
  await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/shop`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  // Stack → Deployment → ReplicaSet → two Pods.
  await expect(page.locator('[data-testid="children"] tr[data-child^="Pod/shop-"][data-depth="3"]')).toHaveCount(2);
  const pods = (await kube.ok('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=portico.dev%2Fstack%3Dshop`)).items;
  expect(pods).toHaveLength(2);

  await page.getByTestId('delete-button').click();
  // Tomcat keeps no data: the dialog says so and asks for no typed name.
  await expect(page.getByTestId('delete-removes')).toContainText('It holds no data.');
  await expect(page.getByTestId('delete-typed-name')).toHaveCount(0);
  // Each way of deleting says what it does to what the Stack owns.
  await page.getByLabel('Propagation').selectOption('Orphan');
  await expect(page.getByTestId('propagation-hint')).toContainText('owned by nothing');
  await page.getByLabel('Propagation').selectOption('Background');
  await expect(page.getByTestId('propagation-hint')).toContainText('in the background');
  await page.getByTestId('delete-dialog').getByRole('button', { name: 'Delete' }).click();
  // Nothing holds it: the page goes back to the list.
  await expect(page).toHaveURL(/\/r\/portico.dev\/v1alpha1\/stacks$/);
  // The garbage collector removes what the Stack owned, and what that owned.
  for (const path of [
    `/apis/apps/v1/namespaces/${ns}/deployments/shop`,
    `/api/v1/namespaces/${ns}/services/shop`,
    ...pods.map((p: any) => `/api/v1/namespaces/${ns}/pods/${p.metadata.name}`),
  ]) {
    await expect.poll(() => kube.status(path), { message: path }).toBe(404);
  }
});


test('binding a Stack to a Deployment from the Stack page hands it the details, and unbinding takes them out', async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('bind');
  await kube.ok('POST', `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`, {
    apiVersion: 'portico.dev/v1alpha1', kind: 'Stack',
    metadata: { name: 'web' }, spec: { choice: 'tomcat' },
  });
  const deployment = `/apis/apps/v1/namespaces/${ns}/deployments/app`;
  await kube.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app' },
    spec: {
      selector: { matchLabels: { app: 'app' } },
      template: {
        metadata: { labels: { app: 'app' } },
        spec: { containers: [{ name: 'app', image: 'portico.local/pause:3.10', env: [{ name: 'OWN', value: 'mine' }] }] },
      },
    },
  });
  const envNames = async () => ((await kube.ok('GET', deployment)).spec.template.spec.containers[0].env ?? [])
    .map((e: any) => e.name).join(',');

  await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/web`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  // A picker, on the Stack's page: the namespace's workloads, the variables the chosen
  // one gets, a name made for it. Nothing typed.
  await page.getByTestId('bind-link').click();
  const picker = page.getByTestId('bind-picker');
  await expect(picker).toBeVisible();
  const choice = picker.locator('[data-target="Deployment app"] input[type=radio]');
  await expect(choice).toBeEnabled();
  await expect(page.getByTestId('bind-variables')).toContainText(`TOMCAT_HOST`);
  await expect(page.getByTestId('bind-variables')).toContainText(`web.${ns}.svc`);
  await expect(page.getByTestId('bind-confirm')).toBeDisabled();
  await choice.check();
  await expect(page.getByTestId('bind-name')).toContainText('app-web');
  await expect(page.getByTestId('bind-name')).toContainText('Deployment app is marked, as you, as accepting them');
  await page.screenshot({ path: 'test-results/binding-picker.png', fullPage: true });
  await page.getByTestId('bind-confirm').click();
  const done = page.getByTestId('bind-done');
  await expect(done).toContainText('Bound: app-web');
  await expect(picker).toBeHidden();
  // The Deployment accepts TOMCAT_ variables now, written as the person: without it
  // the reconciler's admission lets no variable in.
  expect((await kube.ok('GET', deployment)).metadata.annotations?.['portico.dev/binding-prefixes']).toBe('TOMCAT_');
  // The Stack's own table lists it, live; its name leads to the binding's page.
  await expect(page.getByTestId('stack-bindings').locator('tbody')).toContainText('app-web');
  await expect(page.getByTestId('stack-bindings').locator('[data-cell-link="Workload"]'))
    .toHaveAttribute('href', new RegExp(`/r/apps/v1/deployments/${ns}/app$`));
  await done.getByRole('link', { name: 'app-web' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stackbindings/${ns}/app-web$`));
  // The binding's page leads to what it binds.
  const mentions = page.getByTestId('mentions');
  await expect(mentions.locator('[data-mention="Stack"]')).toHaveText('Stack web');
  await expect(mentions.locator('[data-mention="Workload"]')).toHaveText('Deployment app');
  await expect(mentions.locator('[data-mention="Workload"]')).toHaveAttribute('href', new RegExp(`/r/apps/v1/deployments/${ns}/app$`));
  // The reconciler carries it out and says what the Deployment got, on the page, live.
  await expect(page.getByTestId('conditions')).toContainText('Bound', { timeout: 60_000 });
  await expect(page.getByTestId('conditions')).toContainText('TOMCAT_HOST, TOMCAT_PORT, TOMCAT_URL');
  await expect.poll(envNames).toBe('OWN,TOMCAT_TYPE,TOMCAT_PROVIDER,TOMCAT_HOST,TOMCAT_PORT,TOMCAT_URL');

  // Both pages list it: the Stack's and the Deployment's.
  await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/web`);
  await expect(page.getByTestId('stack-bindings').locator('tbody')).toContainText('app-web');
  await page.screenshot({ path: 'test-results/stack-bindings.png', fullPage: true });
  // Deleting the Stack would leave a bound workload: its dialog says which.
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.getByTestId('delete-button').click();
  await expect(page.getByTestId('delete-bindings')).toContainText('Deployment app (binding app-web)');
  await page.getByTestId('delete-dialog').getByRole('button', { name: 'Cancel' }).click();
  await page.goto(`/r/apps/v1/deployments/${ns}/app`);
  await expect(page.getByTestId('stack-bindings').locator('tbody')).toContainText('web');

  // Unbinding: delete the binding from its page; the Deployment keeps only its own.
  await page.goto(`/r/portico.dev/v1alpha1/stackbindings/${ns}/app-web`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.getByTestId('delete-button').click();
  await page.getByTestId('delete-confirm').click();
  // Held by its finalizer until the reconciler has taken the variables out (a moment),
  // then gone: the page says so, live.
  await expect(page.getByTestId('object-gone')).toBeVisible({ timeout: 30_000 });
  await expect.poll(envNames).toBe('OWN');
  await expect.poll(() => kube.status(`/apis/portico.dev/v1alpha1/namespaces/${ns}/stackbindings/app-web`)).toBe(404);
});

test('the catalog offers plans, and a new plan is shown as a diff before it rolls a Stack', async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('plan');
  // The catalog: plans per choice, searchable.
  await page.goto('/provision');
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  const mysql = page.locator('.offer[data-choice="mysql"]');
  await expect(mysql.locator('.plan')).toHaveCount(3);
  await expect(mysql.locator('.plan[data-plan="medium"]')).toContainText('cpu 500m–2 · memory 1Gi–4Gi · 10Gi volume');
  await page.screenshot({ path: 'test-results/catalog-plans.png', fullPage: true });
  await page.getByTestId('catalog-search').fill('servlet');
  await expect(page.locator('.offer')).toHaveCount(1);
  await expect(page.locator('.offer[data-choice="tomcat"]')).toBeVisible();
  await page.getByTestId('catalog-search').fill('postgres');
  await expect(page.getByTestId('no-offers')).toBeVisible();
  await page.getByTestId('catalog-search').fill('');
  // A plan card leads to the form with the choice and the plan filled in.
  await page.locator('.offer[data-choice="tomcat"] .plan[data-plan="small"]').click();
  // The plans with what they mean, and the versions, picked by a click: the one way to
  // choose them on the Provision form (no text field besides).
  const picker = page.getByTestId('stack-picker');
  await expect(picker.locator('.plan.selected')).toHaveAttribute('data-plan', 'small');
  await expect(page.locator('#f-spec-plan')).toHaveCount(0);
  await picker.locator('.plan[data-plan="large"]').click();
  await expect(picker.locator('.plan.selected')).toHaveAttribute('data-plan', 'large');
  await picker.locator('.version-chip[data-version="10.1"]').click();
  await page.screenshot({ path: 'test-results/stack-form-picker.png', fullPage: true });
  // All fields: the generic form, holding what was picked; and back.
  await page.getByTestId('all-fields').click();
  await expect(page.locator('#f-spec-plan')).toHaveValue('large');
  await expect(page.locator('#f-spec-version')).toHaveValue('10.1');
  await page.getByTestId('all-fields').click();
  await expect(page.locator('#f-spec-plan')).toHaveCount(0);
  await picker.locator('.plan[data-plan="small"]').click();
  await page.locator('#f-metadata-name').fill('web');
  await page.locator('#f-metadata-namespace').selectOption(ns);
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(new RegExp(`/r/portico.dev/v1alpha1/stacks/${ns}/web$`));
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);

  // Medium instead: the page shows what changes in the workload before anything does.
  const panel = page.getByTestId('stack-change');
  await panel.getByTestId('change-plan').selectOption('medium');
  const diff = panel.getByTestId('change-diff');
  await expect(diff.locator('.diff-line.add')).toContainText(['cpu: 500m']);
  await expect(diff.locator('.diff-line.del')).toContainText(['cpu: 100m']);
  await expect(panel.getByTestId('change-effect')).toContainText('one replica cannot be reached');
  await page.screenshot({ path: 'test-results/stack-plan-diff.png', fullPage: true });
  // Cancel takes the choice back; nothing was written.
  await panel.getByTestId('change-cancel').click();
  await expect(diff).toHaveCount(0);
  await expect(panel.getByTestId('change-plan')).toHaveValue('small');
  await panel.getByTestId('change-plan').selectOption('medium');
  await expect(diff.locator('.diff-line.add')).toContainText(['cpu: 500m']);
  const deployment = `/apis/apps/v1/namespaces/${ns}/deployments/web`;
  expect((await kube.ok('GET', deployment)).spec.template.spec.containers[0].resources.requests.cpu).toBe('100m');
  await panel.getByTestId('change-apply').click();
  // The reconciler rolls it; the page follows to Ready.
  await expect.poll(async () => (await kube.ok('GET', deployment)).spec.template.spec.containers[0].resources.requests.cpu).toBe('500m');
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  await expect(page.getByTestId('stack-change').getByTestId('change-plan')).toHaveValue('medium');
});

test('a Stack whose password would go with it says so before it is deleted', async ({ page }) => {
  test.setTimeout(180_000);
  const kube = new Kube();
  const ns = await kube.freshNamespace('legacy');
  const stacks = `/apis/portico.dev/v1alpha1/namespaces/${ns}/stacks`;
  // Made to delete its data, its credentials Secret is the Stack's; switched to keep
  // its data later, the Secret stays the Stack's (the reconciler never changes one).
  await kube.ok('POST', stacks, {
    apiVersion: 'portico.dev/v1alpha1', kind: 'Stack',
    metadata: { name: 'old' }, spec: { choice: 'mysql', deletionPolicy: 'Delete' },
  });
  const secret = `/api/v1/namespaces/${ns}/secrets/old-credentials`;
  await expect.poll(() => kube.status(secret)).toBe(200);
  expect((await kube.ok('GET', secret)).metadata.ownerReferences).toHaveLength(1);
  await kube.ok('PATCH', `${stacks}/old`, { spec: { deletionPolicy: 'Retain' } }, merge);
  await page.goto(`/r/portico.dev/v1alpha1/stacks/${ns}/old`);
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  // Settled first: the page is redrawn on every change of the Stack.
  await expect(page.getByTestId('stack-phase')).toHaveText('Ready', REAL);
  await page.getByTestId('delete-button').click();
  await expect(page.getByTestId('delete-keeps')).toContainText('But Secret old-credentials goes with it');
  await expect(page.getByTestId('delete-keeps')).toContainText('kubectl patch secret old-credentials');
});
