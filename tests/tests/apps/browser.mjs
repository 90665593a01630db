// Drives MCP Apps in a real browser for tests/apps_browser.rs: Debian's chromium, headless,
// through playwright-core (pinned in scripts/peers; it never downloads a browser), against
// examples/apps.rs over HTTP.
//
//   node browser.mjs <mcp url> <host port> <sandbox port> <output dir>
//
// It serves the test host (host.html and host.mjs bundled by esbuild) on
// http://127.0.0.1:<host port> and the sandbox proxy on http://127.0.0.1:<sandbox port>
// (another origin; sandbox.html carries the view's Content Security Policy as a header), then,
// for each era, opens the host, waits for the view to render the tool's input and result,
// checks the view cannot reach the network, clicks the view's first <button> (which calls the
// app-only tool through the host) and waits for the page to change, with a screenshot before
// and after. Last, a page on the sandbox origin (a loopback origin the server does not name)
// tries to call the server. It prints one JSON object; any failure prints {"error"} and exits 1.

import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const modules = process.env.SAKE_NODE_MODULES;
const fromPeers = (name) => require(require.resolve(name, { paths: [modules] }));
const esbuild = fromPeers('esbuild');
const { chromium } = fromPeers('playwright-core');

const [serverUrl, hostPort, sandboxPort, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: browser.mjs <mcp url> <host port> <sandbox port> <output dir>');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.SAKE_CHROMIUM || '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const STEP_MS = 30_000;
const hostOrigin = `http://127.0.0.1:${hostPort}`;
const sandboxOrigin = `http://127.0.0.1:${sandboxPort}`;
const mcpOrigin = new URL(serverUrl).origin;

// --- the Content Security Policy a host builds from a view's `_meta.ui.csp` ----------------
// As the specification builds it ("Content Security Policy Enforcement"), with the restrictive
// default when the view declares none; an entry that is not an origin is left out.
const ORIGIN = /^(https?|wss?):\/\/(\*\.)?[a-z0-9.-]+(:(\d{1,5}|\*))?\/?$/i;
function policy(csp) {
  if (!csp) {
    return [
      "default-src 'none'",
      "script-src 'self' 'unsafe-inline'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "media-src 'self' data:",
      "connect-src 'none'",
      "frame-src 'none'",
      "object-src 'none'",
      "base-uri 'self'",
    ].join('; ');
  }
  const list = (l) => (Array.isArray(l) ? l.filter((o) => typeof o === 'string' && ORIGIN.test(o)) : []);
  const with_ = (base, extra) => [base, ...extra].join(' ');
  const resources = list(csp.resourceDomains);
  const frames = list(csp.frameDomains);
  const bases = list(csp.baseUriDomains);
  return [
    "default-src 'none'",
    with_("script-src 'self' 'unsafe-inline'", resources),
    with_("style-src 'self' 'unsafe-inline'", resources),
    with_("connect-src 'self'", list(csp.connectDomains)),
    with_("img-src 'self' data:", resources),
    with_("font-src 'self'", resources),
    with_("media-src 'self' data:", resources),
    frames.length ? with_('frame-src', frames) : "frame-src 'none'",
    "object-src 'none'",
    bases.length ? with_('base-uri', bases) : "base-uri 'self'",
  ].join('; ');
}

// --- the two origins ---------------------------------------------------------------------------
const bundle = await esbuild.build({
  entryPoints: [join(here, 'host.mjs')],
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2022',
  write: false,
  nodePaths: [modules],
  logLevel: 'silent',
});
const hostJs = bundle.outputFiles[0].contents;
const file = (name) => readFileSync(join(here, name));

function serve(port, routes) {
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const route = routes[url.pathname];
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
      return;
    }
    const { type, body, headers } = route(url);
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store', ...headers }).end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), '127.0.0.1', () => resolve(server));
  });
}

const hostServer = await serve(hostPort, {
  '/host.html': () => ({ type: 'text/html; charset=utf-8', body: file('host.html') }),
  '/host.js': () => ({ type: 'text/javascript; charset=utf-8', body: hostJs }),
  '/favicon.ico': () => ({ type: 'image/x-icon', body: '' }),
});
const sandboxServer = await serve(sandboxPort, {
  '/sandbox.html': (url) => {
    let csp = null;
    try {
      csp = JSON.parse(url.searchParams.get('csp') ?? 'null');
    } catch {
      csp = null;
    }
    return {
      type: 'text/html; charset=utf-8',
      body: file('sandbox.html'),
      headers: { 'content-security-policy': policy(csp) },
    };
  },
  '/sandbox.js': () => ({ type: 'text/javascript; charset=utf-8', body: file('sandbox.js') }),
  // A page of an origin the server does not name, without a policy of its own.
  '/plain.html': () => ({ type: 'text/html; charset=utf-8', body: '<!DOCTYPE html><title>plain</title>' }),
});

// --- the browser -------------------------------------------------------------------------------
const profile = mkdtempSync(join(tmpdir(), 'sake-chromium-'));
let context;
const cleanup = async () => {
  await context?.close().catch(() => {});
  hostServer.close();
  sandboxServer.close();
  rmSync(profile, { recursive: true, force: true });
};
const fail = async (error) => {
  console.log(JSON.stringify({ error: String(error?.stack ?? error) }));
  await cleanup();
  process.exit(1);
};
// Never outlive the test: give up (closing the browser) before it would.
setTimeout(() => fail(new Error('the browser run took longer than 150 s')), 150_000).unref();

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 520, height: 520 },
    deviceScaleFactor: 1,
  });
  const version = context.browser()?.version() ?? null;

  const requests = [];
  context.on('request', (r) => requests.push(r.url()));
  const failed = [];
  context.on('requestfailed', (r) => failed.push({ url: r.url(), failure: r.failure()?.errorText }));

  async function era(name, label) {
    const page = await context.newPage();
    const console_ = [];
    page.on('console', (m) => {
      if (m.type() === 'error') console_.push(`${m.location()?.url ?? ''}: ${m.text()}`);
    });
    page.on('pageerror', (e) => console_.push(`pageerror: ${e.message}`));
    const url = new URL('/host.html', hostOrigin);
    url.searchParams.set('server', serverUrl);
    url.searchParams.set('era', name);
    url.searchParams.set('sandbox', `${sandboxOrigin}/sandbox.html`);
    url.searchParams.set('tool', 'show_tally');
    url.searchParams.set('label', label);
    await page.goto(url.href);
    await page.waitForFunction(
      () => window.host && (window.host.state === 'rendered' || window.host.state === 'failed'),
      null,
      { timeout: STEP_MS },
    );
    const rendered = await page.evaluate(() => window.host);
    if (rendered.state !== 'rendered') {
      return { host: rendered, console: console_ };
    }
    const view = page.frameLocator('#view').frameLocator('iframe');
    await view.locator('#summary').waitFor({ state: 'visible', timeout: STEP_MS });
    const before = await view.locator('body').innerText();
    const buttonText = await view.locator('button').first().innerText();
    await page.screenshot({ path: join(outDir, `${name}-before.png`) });

    // The view's own frame: it cannot reach the network (its CSP, from its `_meta.ui.csp`).
    const frame = page.frames().find((f) => f.parentFrame()?.url().startsWith(sandboxOrigin));
    const probe = await frame.evaluate(
      () =>
        new Promise((resolve) => {
          document.addEventListener(
            'securitypolicyviolation',
            (e) => resolve({ violated: e.effectiveDirective, blocked: e.blockedURI }),
            { once: true },
          );
          fetch('http://127.0.0.1:9/probe').then(
            () => resolve({ fetched: true }),
            () => {},
          );
          setTimeout(() => resolve({ noViolation: true }), 5000);
        }),
    );

    await view.locator('button').first().click();
    await view
      .locator('#count')
      .filter({ hasText: /^1$/ })
      .waitFor({ timeout: STEP_MS });
    await view.locator('#summary').filter({ hasText: `${label}: 1` }).waitFor({ timeout: STEP_MS });
    const after = await view.locator('body').innerText();
    await page.screenshot({ path: join(outDir, `${name}-after.png`) });
    const host = await page.evaluate(() => window.host);
    await page.close();
    return { host, before, after, buttonText, probe, console: console_ };
  }

  mkdirSync(outDir, { recursive: true });
  const modern = await era('modern', 'Cups of tea');
  const legacy = await era('legacy', 'Pages read');

  // An unlisted loopback origin: served (it passes the DNS-rebinding check) but without a
  // CORS grant, so its page cannot call the server.
  const plain = await context.newPage();
  await plain.goto(`${sandboxOrigin}/plain.html`);
  const unlisted = await plain.evaluate(async (mcp) => {
    try {
      const r = await fetch(mcp, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'server/discover',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'server/discover',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      return { status: r.status };
    } catch (e) {
      return { refused: `${e.name}: ${e.message}` };
    }
  }, serverUrl);
  await plain.close();

  const origins = [...new Set(requests.map((u) => new URL(u).origin))].sort();
  console.log(
    JSON.stringify({
      chromium: version,
      modern,
      legacy,
      unlisted,
      origins,
      failedRequests: failed,
      expectedOrigins: [hostOrigin, sandboxOrigin, mcpOrigin].sort(),
    }),
  );
  await cleanup();
  process.exit(0);
} catch (e) {
  await fail(e);
}
