import { builds, launchChromium, startPortico } from './portico.mjs';
const { child, origin } = await startPortico(builds.debug);
const browser = await launchChromium();
const page = await browser.newPage();
page.on('console', (m) => console.log('CONSOLE', m.type(), m.text().slice(0, 1500)));
await page.goto(`${origin}/r/cert-manager.io/v1/certificaterequests/corpus/sample/edit`);
await page.waitForTimeout(4000);
console.log('hydrated:', await page.locator('body[data-hydrated="true"]').count());
await browser.close(); child.kill();
