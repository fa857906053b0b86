// The operator console's browser test (run by ConsoleBrowserIT): Debian's headless chromium, driven by playwright-core,
// signs in with the admin key, finds a job by its idempotency key, opens its page and checks what an operator needs:
// its status, its attempts, its output image loaded. Keyboard first (the skip link), and readable in dark mode. Saves
// screenshots of the job's page (light and dark). Fails if the page asks anything of another origin (it works offline),
// and checks that no key and a tenant's key are refused.
//
//   GATEWAY_URL=http://127.0.0.1:8080 ADMIN_KEY=dev-admin-key TENANT_KEY=dev-acme-key IDEMPOTENCY_KEY=order-42 \
//   JOB_ID=... OUT_DIR=target/console node console-job.mjs
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const base = process.env.GATEWAY_URL ?? 'http://127.0.0.1:8080';
const outDir = process.env.OUT_DIR ?? 'target/console';
const key = process.env.IDEMPOTENCY_KEY ?? 'order-42';
const jobId = process.env.JOB_ID;
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
mkdirSync(outDir, { recursive: true });

const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const outside = [];
const result = {};
try {
  // Refused without the admin key: none, and a tenant's. A headless browser cannot show the sign-in prompt (it gives
  // up on a 401 that asks for Basic), so the browser's own requests read the answers.
  const stranger = await browser.newContext();
  const none = await stranger.request.get(`${base}/console/jobs`);
  if (none.status() !== 401 || !/^Basic /.test(none.headers()['www-authenticate'] ?? '')) {
    throw new Error(`no key: ${none.status()} ${none.headers()['www-authenticate']}, not 401 asking for Basic`);
  }
  result['no key'] = none.status();
  const tenant = await stranger.request.get(`${base}/console/jobs`, {
    headers: { Authorization: `Basic ${Buffer.from(`acme:${process.env.TENANT_KEY}`).toString('base64')}` },
  });
  if (tenant.status() !== 401) throw new Error(`tenant key: ${tenant.status()}, not 401`);
  result['tenant key'] = tenant.status();
  await stranger.close();

  const context = await browser.newContext({
    viewport: { width: 1280, height: 1000 },
    httpCredentials: { username: 'oncall-alice', password: process.env.ADMIN_KEY },
  });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(base) && !url.startsWith('data:')) outside.push(url);
  });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });

  await page.goto(`${base}/console/jobs`);
  // Keyboard first: the first Tab lands on the skip link.
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement?.textContent?.trim());
  if (!/Skip/.test(focused ?? '')) throw new Error(`the first Tab focused "${focused}", not the skip link`);

  // Find the job by its idempotency key, through the labelled search field.
  await page.getByLabel('Job id or idempotency key').fill(key);
  await page.getByRole('button', { name: 'Find' }).click();
  await page.waitForURL(/find=/);
  const link = page.getByRole('link', { name: jobId });
  await link.waitFor();
  result.found = await page.locator('#count').innerText();
  await link.click();
  await page.waitForURL(new RegExp(`/console/jobs/${jobId}$`));

  await page.getByRole('heading', { level: 1 }).filter({ hasText: jobId }).waitFor();
  result.status = (await page.locator('#job-status').innerText()).trim();
  if (result.status !== 'succeeded') throw new Error(`the job's page says ${result.status}`);
  const attempts = page.locator('#attempts tbody tr');
  result.attempts = await attempts.count();
  if (result.attempts < 1) throw new Error('no attempt on the job\'s page');
  result.outcome = (await attempts.first().locator('td').nth(6).innerText()).trim();
  result.revision = (await attempts.first().locator('td').nth(2).innerText()).trim();
  const image = page.locator('#output-image');
  await image.waitFor();
  await page.waitForFunction(() => {
    const img = document.querySelector('#output-image');
    return img && img.complete && img.naturalWidth > 0;
  });
  result.image = await image.evaluate((img) => `${img.naturalWidth}x${img.naturalHeight}`);
  result.timeline = await page.locator('ol.timeline li').count();
  await page.screenshot({ path: `${outDir}/console-job.png`, fullPage: true });
  await page.screenshot({ path: `${outDir}/console-job-top.png` }); // docs/images/console-job.png

  // Dark mode: the page follows the system's setting and stays readable (a dark background, light text).
  await page.emulateMedia({ colorScheme: 'dark' });
  const colors = await page.evaluate(() => {
    const lum = (c) => {
      const [r, g, b] = c.match(/\d+/g).slice(0, 3).map(Number).map((v) => v / 255)
        .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const body = getComputedStyle(document.body);
    const bg = lum(getComputedStyle(document.documentElement).backgroundColor.includes('rgba(0, 0, 0, 0)')
      ? body.backgroundColor : getComputedStyle(document.documentElement).backgroundColor);
    const fg = lum(body.color);
    return { bg, fg, contrast: (Math.max(bg, fg) + 0.05) / (Math.min(bg, fg) + 0.05) };
  });
  if (!(colors.bg < 0.1 && colors.contrast >= 4.5)) throw new Error(`dark mode not readable: ${JSON.stringify(colors)}`);
  result.darkContrast = Math.round(colors.contrast * 10) / 10;
  await page.screenshot({ path: `${outDir}/console-job-dark.png`, fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });

  // Actions ask first: every confirmation is accepted (and counted).
  let confirmations = 0;
  page.on('dialog', async (dialog) => { confirmations += 1; await dialog.accept(); });

  // A failed demo job, redriven from its page, succeeds under its id.
  if (process.env.FAILED_JOB_ID) {
    const failed = process.env.FAILED_JOB_ID;
    await page.goto(`${base}/console/jobs?status=failed`);
    await page.getByRole('link', { name: failed }).click();
    await page.waitForURL(new RegExp(`/console/jobs/${failed}$`));
    const redrive = page.getByRole('form', { name: 'Redrive the job' });
    await redrive.getByLabel('Reason').fill('the simulator fault was for the first submit only');
    await redrive.getByRole('button', { name: 'Redrive' }).click();
    await page.locator('#actions-taken').waitFor({ timeout: 20_000 });
    await page.waitForFunction(() => document.querySelector('#job-status')?.textContent?.trim() === 'succeeded', null,
      { timeout: 60_000 });
    result.redriven = (await page.locator('#actions-taken li').first().innerText()).trim();
    await page.screenshot({ path: `${outDir}/console-redriven.png`, fullPage: true });
  }

  // A running canary candidate, stopped from the overview.
  if (process.env.CANARY_PROVIDER) {
    const provider = process.env.CANARY_PROVIDER;
    await page.goto(`${base}/console`);
    const canary = page.locator(`#canary-${provider}`);
    for (let i = 0; i < 30 && !(await canary.count()); i += 1) {
      await page.waitForTimeout(1000); // the canary is recorded within one gates period of the start
      await page.reload();
    }
    await canary.getByRole('button', { name: 'Stop' }).click();
    await page.waitForFunction((p) => document.querySelector(`#canary-${p} .status`)?.textContent?.trim() === 'stopped',
      provider, { timeout: 20_000 });
    result.canary = (await canary.locator('.status').innerText()).trim();
    await page.screenshot({ path: `${outDir}/console-overview.png`, fullPage: true });
  }
  result.confirmations = confirmations;
  if (errors.length) throw new Error(`the page logged errors: ${errors.join('; ')}`);
} finally {
  await browser.close();
}
if (outside.length) throw new Error(`the console asked another origin: ${outside.join(', ')}`);
console.log(JSON.stringify(result));
