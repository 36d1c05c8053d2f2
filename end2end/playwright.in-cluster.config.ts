import { join } from 'node:path';
import { defineConfig } from '@playwright/test';
import { chromiumPath } from './chromium';

// The admin client of the tests (tests/kube.ts) talks to the cluster serve.sh started.
process.env.PORTICO_E2E_KUBECONFIG ??= join(__dirname, '.state', 'in-cluster', 'kubeconfig.json');

// Portico deployed in the local cluster from its image and deploy/overlays/local,
// reached through Traefik at https://portico.test (in-cluster/serve.sh). The page
// reaches the Ingress on the real node's address, which serve.sh prints when the first
// page answers through it; the specs map portico.test there (in-cluster/browser.ts).
export default defineConfig({
  testDir: './in-cluster',
  timeout: 120_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list']],
  outputDir: './test-results/in-cluster',
  use: {
    baseURL: 'https://portico.test',
    browserName: 'chromium',
    launchOptions: { executablePath: chromiumPath },
    screenshot: 'only-on-failure',
    trace: 'off',
  },
  webServer: {
    command: 'bash ./in-cluster/serve.sh',
    // Named groups become PORTICO_INGRESS_IP, _SPKI and APPLY_TO_PAGE_MS for the specs.
    wait: {
      stdout:
        /in-cluster ready: ip=(?<portico_ingress_ip>[0-9.]+) spki=(?<portico_ingress_spki>\S+) apply_to_page_ms=(?<apply_to_page_ms>\d+)/,
    },
    timeout: 600_000,
    reuseExistingServer: false,
    stdout: 'pipe',
    stderr: 'pipe',
    gracefulShutdown: { signal: 'SIGTERM', timeout: 30_000 },
  },
});
