// Every browser test runs on a page watched for failures nothing else would show: an
// uncaught exception (the broken release build's "WebAssembly.Table.set(): Argument 1
// is invalid" was one, and every test that did not look for it passed) or a Rust panic
// logged by console_error_panic_hook. Either fails the test that saw it.
import { test as base, expect } from '@playwright/test';

export { expect };

export const test = base.extend({
  page: async ({ page }, use) => {
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(`uncaught: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && /panicked at|RuntimeError|WebAssembly\./.test(message.text())) {
        failures.push(`console: ${message.text()}`);
      }
    });
    await use(page);
    expect(failures, 'the page threw nothing and nothing panicked').toEqual([]);
  },
});
