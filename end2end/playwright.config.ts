import { join } from 'node:path';
import { defineConfig, type PlaywrightTestConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath } from './chromium';

// Loopback only. The port can be moved when 3107 is taken.
const port = Number(process.env.PORTICO_E2E_PORT ?? 3107);

// The second lane: single sign-on (a token's lifetime is waited out) and the real
// node's containers (Stacks provisioned, logs, usage, a terminal).
const WAITING = /\/(sso|provision|logs|usage|terminal)\.spec\.ts$/;

// The specs of the browser's own logic (forms and their validation, the row window's
// arithmetic, live updates, navigation), which scripts/test.sh also runs against the
// debug build: its wasm keeps the overflow checks and debug assertions the release
// build compiles out. With PORTICO_E2E_ALSO_DEBUG=1 (and PORTICO_E2E_BUILD=release) a
// debug server on the next port joins the same cluster once the release server is
// ready, and these specs run against it after the others.
const DEBUG_SPECS = /\/(forms|window|live|navigation)\.spec\.ts$/;
const alsoDebug = process.env.PORTICO_E2E_ALSO_DEBUG === '1';
const debugPort = port + 1;

type WebServer = NonNullable<PlaywrightTestConfig['webServer']>;
const server = (on: number, env: Record<string, string> = {}): WebServer => ({
  // A real control plane with the seed fixtures, and Portico serving against it
  // (or against $KUBECONFIG's cluster when that is set).
  command: `bash ./serve.sh ${on}`,
  url: `http://127.0.0.1:${on}/readyz`,
  timeout: 180_000,
  reuseExistingServer: false,
  stdout: 'pipe',
  stderr: 'pipe',
  env,
});

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  // One test at a time. Two lanes (the projects below, one worker each) were tried in
  // session 39: they saved about 70 s, but a spec that burns a core (usage) cannot get
  // one beside the browser's lane on two cores, and a corpus page's AGE once stayed
  // 60 s behind kubectl's under that load (docs/ci.md, "lanes"). The projects stay so
  // that a machine with cores to spare can set workers: 2.
  workers: 1,
  projects: [
    { name: 'browser', testIgnore: WAITING, workers: 1 },
    { name: 'waiting', testMatch: WAITING, workers: 1 },
    ...(alsoDebug
      ? [{
          name: 'debug',
          testMatch: DEBUG_SPECS,
          workers: 1,
          use: { baseURL: `http://127.0.0.1:${debugPort}` },
        }]
      : []),
  ],
  retries: 0,
  reporter: [['list']],
  outputDir: './test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: 'chromium',
    launchOptions: { executablePath: chromiumPath, args: chromiumArgs },
    screenshot: 'only-on-failure',
    trace: 'off',
  },
  // Playwright starts these one after the other, each once the one before answers.
  webServer: alsoDebug
    ? [
        server(port),
        server(debugPort, {
          PORTICO_E2E_BUILD: 'debug',
          PORTICO_E2E_CLUSTER: join(__dirname, '.state', 'kubeconfig.json'),
        }),
      ]
    : server(port),
});
