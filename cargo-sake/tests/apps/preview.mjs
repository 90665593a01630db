// Drives `cargo sake dev`'s MCP Apps preview in a real browser for cargo-sake/tests/apps.rs:
// Debian's chromium, headless, through playwright-core (pinned in scripts/peers; it never
// downloads a browser).
//
//   node preview.mjs <page url> <view html file> <output dir>
//
// Opens the page, checks the tools it lists, chooses `show_tally`, fills the form with a label
// and submits it; waits for the view (in the sandbox proxy on the other origin) to show the
// tool's input and result, clicks the view's button (the app-only `add_to_tally`, called
// through the page) and waits for the view to show the new count. Then it edits the view's
// HTML file (adds a line to it), waits for `cargo sake dev` to rebuild and the page to reload
// the view with the same inputs, and reads it again. It prints one JSON object; any failure
// prints {"error"} and exits 1.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const modules = process.env.SAKE_NODE_MODULES;
const { chromium } = require(require.resolve('playwright-core', { paths: [modules] }));

const [pageUrl, viewFile, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: preview.mjs <page url> <view html file> <output dir>');
  process.exit(2);
}
const CHROMIUM = process.env.SAKE_CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const STEP_MS = 30_000;
// A rebuild of the crate on a busy machine.
const REBUILD_MS = 240_000;
const LABEL = 'Cups of tea';
const EDIT = '<p id="edited">edited while the preview was open</p>';

const profile = mkdtempSync(join(tmpdir(), 'sake-chromium-'));
let context;
let page;
const cleanup = async () => {
  await context?.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
};
const fail = async (error) => {
  const state = await page?.evaluate(() => window.sakeApps).catch(() => null);
  console.log(JSON.stringify({ error: String(error?.stack ?? error), state: state ?? null }));
  await cleanup();
  process.exit(1);
};
setTimeout(() => fail(new Error('the browser run took longer than 330 s')), 330_000).unref();

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1100, height: 800 },
    deviceScaleFactor: 1,
  });
  const errors = [];
  const sandboxes = [];
  context.on('response', (r) => {
    if (new URL(r.url()).pathname === '/_sake/apps/sandbox') {
      sandboxes.push({ url: r.url(), origin: new URL(r.url()).origin, csp: r.headers()['content-security-policy'] ?? null });
    }
  });
  page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.location()?.url ?? ''}: ${m.text()}`);
  });
  const settled = (states) =>
    page.waitForFunction(
      (s) => window.sakeApps && (s.includes(window.sakeApps.state) || window.sakeApps.state === 'failed'),
      states,
      { timeout: STEP_MS },
    );
  const snapshot = () => page.evaluate(() => JSON.parse(JSON.stringify(window.sakeApps)));

  await page.goto(pageUrl);
  await settled(['ready']);
  const ready = await snapshot();
  if (ready.state !== 'ready') throw new Error(`the page did not start: ${JSON.stringify(ready)}`);
  const listed = await page.locator('nav button').allInnerTexts();

  // The form, from show_tally's input schema.
  await page.locator('nav button[data-tool="show_tally"]').click();
  const form = await page.locator('#fields label').allInnerTexts();
  await page.locator('#field-label').fill(LABEL);
  await page.locator('#form button[type="submit"]').click();
  await settled(['rendered']);
  const rendered = await snapshot();
  if (rendered.state !== 'rendered') throw new Error(`no view: ${JSON.stringify(rendered)}`);
  const frames = page.frames().map((f) => new URL(f.url() || 'about:blank').origin);
  const view = page.frameLocator('#view').frameLocator('iframe');
  await view.locator('#summary').waitFor({ state: 'visible', timeout: STEP_MS });
  const before = await view.locator('main').innerText();
  // The view cannot reach the network (the default policy: connect-src 'none').
  const fetched = await page.frames().find((f) => f.parentFrame()?.parentFrame() === page.mainFrame())
    ?.evaluate(() => fetch('http://127.0.0.1:9/').then(() => 'reached', (e) => `blocked: ${e.name}`));
  await page.screenshot({ path: join(outDir, 'preview.png') });

  // The view's button calls the app-only tool through the page.
  await view.locator('button').first().click();
  await page.waitForFunction(() => window.sakeApps.appCalls.length === 1, null, { timeout: STEP_MS });
  await view.locator('#count').filter({ hasText: '1' }).waitFor({ timeout: STEP_MS });
  const after = await view.locator('main').innerText();
  const first = await snapshot();

  // An edit of the view's HTML: dev rebuilds, the page reloads the view with the same inputs.
  const html = readFileSync(viewFile, 'utf8');
  if (!html.includes('</main>')) throw new Error(`${viewFile} has no </main>`);
  writeFileSync(viewFile, html.replace('</main>', `${EDIT}\n</main>`));
  await page.waitForFunction(
    () => window.sakeApps && window.sakeApps.reloads === 1 && ['rendered', 'failed'].includes(window.sakeApps.state),
    null,
    { timeout: REBUILD_MS, polling: 250 },
  );
  const reloaded = await snapshot();
  if (reloaded.state !== 'rendered') throw new Error(`not rendered after the reload: ${JSON.stringify(reloaded)}`);
  const view2 = page.frameLocator('#view').frameLocator('iframe');
  await view2.locator('#edited').waitFor({ state: 'visible', timeout: STEP_MS });
  const edited = await view2.locator('main').innerText();
  const input = await page.locator('#field-label').inputValue();
  await page.screenshot({ path: join(outDir, 'reloaded.png') });

  console.log(JSON.stringify({
    listed,
    form,
    frames,
    sandboxes,
    fetched,
    before,
    after,
    first: { tools: first.tools, args: first.args, result: first.result, appCalls: first.appCalls, log: first.log, build: first.build },
    reloaded: { tools: reloaded.tools, args: reloaded.args, values: reloaded.values, log: reloaded.log, build: reloaded.build, reloads: reloaded.reloads },
    edited,
    input,
    errors,
    chromium: context.browser()?.version() ?? null,
  }));
  await cleanup();
  process.exit(0);
} catch (e) {
  await fail(e);
}
