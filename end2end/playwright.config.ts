import { defineConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath } from './chromium';

// Loopback only. The port can be moved when 3107 is taken.
const port = Number(process.env.PORTICO_E2E_PORT ?? 3107);

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
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
  webServer: {
    // A real control plane with the seed fixtures, and Portico serving against it
    // (or against $KUBECONFIG's cluster when that is set).
    command: `bash ./serve.sh ${port}`,
    url: `http://127.0.0.1:${port}/readyz`,
    timeout: 180_000,
    reuseExistingServer: false,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
