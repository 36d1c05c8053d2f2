// Every browser test runs on a page watched for failures nothing else would show: an
// uncaught exception (the broken release build's "WebAssembly.Table.set(): Argument 1
// is invalid" was one, and every test that did not look for it passed) or a Rust panic
// logged by console_error_panic_hook. Either fails the test that saw it.
import { test as base, expect } from '@playwright/test';

export { expect };

export const test = base.extend<{ expectedFailures: RegExp | null }>({
  // What a test provokes on purpose (`test.use({ expectedFailures: /…/ })`): then every
  // failure must match it, and one at least must be seen.
  expectedFailures: [null, { option: true }],
  page: async ({ page, expectedFailures }, use) => {
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(`uncaught: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && /panicked at|RuntimeError|WebAssembly\./.test(message.text())) {
        failures.push(`console: ${message.text()}`);
      }
    });
    await use(page);
    const unexpected = failures.filter((f) => !expectedFailures?.test(f));
    expect(unexpected, 'the page threw nothing and nothing panicked').toEqual([]);
    if (expectedFailures) expect(failures.length, `provoked: ${expectedFailures}`).toBeGreaterThan(0);
  },
});
