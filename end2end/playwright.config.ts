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
// ready, and these specs run against it in whichever lane is free first (the waiting
// lane ends well before the other).
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
  // Two lanes at once, one test at a time in each (docs/ci.md, "Lanes"): the specs
  // that mostly wait (for an ID token to expire, for MariaDB and Tomcat on the real
  // node) beside the rest, whose time is the browser's own work. The sign-on specs serve
  // their own Portico and people; the second lane alone holds the real node's CPUs
  // (holdNodesTo) or asks it for any.
  workers: 2,
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
