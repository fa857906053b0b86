// The browser test's script (run by HawtioBrowserIT): Debian's headless chromium, driven by
// playwright-core, opens the hawtio command's console and checks what an operator on call needs:
// jobgate's routes with their exchange counts, and a route's diagram. Saves screenshots of both.
// Fails if the page asks anything of another origin (the console must work offline).
//
//   HAWTIO_URL=http://127.0.0.1:8081 OUT_DIR=target/hawtio ROUTE=create-job node hawtio-routes.mjs
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const base = process.env.HAWTIO_URL ?? 'http://127.0.0.1:8081';
const outDir = process.env.OUT_DIR ?? 'target/hawtio';
const route = process.env.ROUTE ?? 'create-job';
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
mkdirSync(outDir, { recursive: true });

const browser = await chromium.launch({
  executablePath: chromiumPath,
  // Flags that keep a headless chromium quiet and off the network (stack-notes, "Hawtio").
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const outside = [];
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(20_000);
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(base) && !url.startsWith('data:') && !url.startsWith('blob:')) outside.push(url);
  });

  // The routes of the context, as a table with a row per route and its exchange counts.
  await page.goto(`${base}/hawtio/camel`);
  await page.getByText('routes', { exact: true }).first().click();
  await page.locator('thead th').filter({ hasText: 'Completed' }).first().waitFor();
  const headers = (await page.locator('thead th').allInnerTexts()).map((h) => h.trim());
  const completedAt = headers.indexOf('Completed');
  if (completedAt < 0) throw new Error(`no Completed column in the routes table: ${headers}`);
  const row = page.locator('tbody tr').filter({ has: page.getByText(route, { exact: true }) });
  // The table refreshes on its own: wait for the exchange the test sent to be counted.
  let completed = 0;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline && completed < 1;) {
    const cells = await row.first().locator('td').allInnerTexts();
    completed = Number.parseInt(cells[completedAt] ?? '0', 10) || 0;
    if (completed < 1) await page.waitForTimeout(500);
  }
  if (completed < 1) throw new Error(`route ${route} shows no completed exchange`);
  const routes = await page.locator('tbody tr').count();
  await page.screenshot({ path: `${outDir}/routes.png` });

  // One route's diagram: its nodes drawn from the route's XML (dumpRoutesAsXml through Jolokia).
  await page.getByText(route, { exact: true }).first().click();
  await page.getByText('Route Diagram', { exact: true }).first().click();
  await page.locator('.react-flow__node').nth(1).waitFor();
  const nodes = await page.locator('.react-flow__node').count();
  await page.screenshot({ path: `${outDir}/route-diagram.png` });

  if (outside.length) throw new Error(`the console asked another origin (offline it would fail): ${outside.join(', ')}`);
  console.log(JSON.stringify({ routes, route, completed, diagramNodes: nodes }));
} catch (e) {
  console.error(`hawtio-routes: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
