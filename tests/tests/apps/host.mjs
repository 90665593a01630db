// The host page of tests/apps_browser.rs: a web host of MCP Apps built from the official
// pieces — the TypeScript SDK client (@modelcontextprotocol/client) talks to the MCP server,
// the host bridge (AppBridge, @modelcontextprotocol/ext-apps) talks to the view — and a
// sandbox proxy on another origin that loads the view under the Content Security Policy built
// from the view's own `_meta.ui.csp` (sandbox.html, served by browser.mjs).
//
// Bundled for the browser by esbuild (browser.mjs) from the pinned packages in
// $SAKE_NODE_MODULES; nothing comes from a CDN. Query parameters:
//   server   the MCP endpoint (http://127.0.0.1:PORT/mcp)
//   era      "modern" (2026-07-28, server/discover) or "legacy" (initialize, 2025-11-25)
//   sandbox  the sandbox proxy's URL (another origin)
//   tool     the tool to call, whose view is shown
//   label    the tool's `label` argument
//
// What happens is recorded in `window.host` (read by the driver) and shown on the page.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from '@modelcontextprotocol/ext-apps/app-bridge';

const params = new URL(window.location.href).searchParams;
const host = {
  state: 'starting',
  error: null,
  era: params.get('era'),
  steps: [],
  tools: null,
  view: null,
  appInfo: null,
  sizes: [],
  appCalls: [],
  logs: [],
};
window.host = host;

const logElement = document.getElementById('log');
function step(name, value) {
  host.steps.push(name);
  const line = document.createElement('div');
  line.textContent = value === undefined ? name : `${name}: ${JSON.stringify(value)}`;
  logElement.appendChild(line);
}

const HOST_INFO = { name: 'sake-apps-test-host', version: '1.0.0' };
const UI = 'io.modelcontextprotocol/ui';

async function run() {
  const server = new URL(params.get('server'));
  const modern = host.era === 'modern';
  const client = new Client(HOST_INFO, {
    // The extension, declared as the specification says: in `initialize` on the handshake
    // revisions, in every request's `_meta` on 2026-07-28 (the SDK puts the capabilities there).
    capabilities: { extensions: { [UI]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    ...(modern
      ? { versionNegotiation: { mode: { pin: '2026-07-28' } } }
      : { supportedProtocolVersions: ['2025-11-25'] }),
  });
  await client.connect(new StreamableHTTPClientTransport(server));
  host.protocolVersion = client.getNegotiatedProtocolVersion();
  host.serverCapabilities = client.getServerCapabilities();
  step('connected', host.protocolVersion);

  const { tools } = await client.listTools();
  host.tools = tools.map((t) => ({ name: t.name, _meta: t._meta ?? null }));
  step('tools', host.tools.map((t) => t.name));
  const tool = tools.find((t) => t.name === params.get('tool'));
  if (!tool) throw new Error(`the server lists no tool ${params.get('tool')}`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`tool ${tool.name} has no view`);

  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (read.contents.length !== 1 || content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`the view ${uri} is not one ${RESOURCE_MIME_TYPE} document`);
  }
  const html = 'blob' in content ? atob(content.blob) : content.text;
  const ui = content._meta?.ui ?? {};
  host.view = { uri, mimeType: content.mimeType, meta: content._meta ?? null, bytes: html.length };
  step('view read', uri);

  // The sandbox proxy: another origin, its CSP (an HTTP header) built from the view's csp.
  const iframe = document.createElement('iframe');
  iframe.id = 'view';
  iframe.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
  iframe.setAttribute('title', 'MCP App view');
  if (ui.prefersBorder === false) iframe.classList.add('borderless');
  const sandboxUrl = new URL(params.get('sandbox'));
  sandboxUrl.searchParams.set('csp', JSON.stringify(ui.csp ?? null));
  const proxyReady = new Promise((resolve) => {
    const listener = (event) => {
      if (
        event.source === iframe.contentWindow &&
        event.data?.method === 'ui/notifications/sandbox-proxy-ready'
      ) {
        window.removeEventListener('message', listener);
        resolve();
      }
    };
    window.addEventListener('message', listener);
  });
  iframe.src = sandboxUrl.href;
  document.getElementById('stage').appendChild(iframe);
  await proxyReady;
  step('sandbox ready', sandboxUrl.origin);

  const caps = client.getServerCapabilities();
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    { openLinks: {}, serverTools: caps.tools, serverResources: caps.resources, logging: {} },
    {
      hostContext: {
        theme: 'light',
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        platform: 'web',
        containerDimensions: { maxHeight: 480, width: 380 },
        locale: 'en-US',
      },
    },
  );
  bridge.addEventListener('sizechange', ({ width, height }) => {
    host.sizes.push({ width, height });
    if (height !== undefined) iframe.style.height = `${height}px`;
  });
  bridge.addEventListener('loggingmessage', (m) => host.logs.push(m));
  const initialized = new Promise((resolve) => bridge.addEventListener('initialized', resolve));
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));

  // What the view calls goes to the server through the bridge; a host forwards only what the
  // view may call: tools of this server whose visibility includes "app".
  const byName = new Map(tools.map((t) => [t.name, t]));
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (call, extra) => {
    const visibility = byName.get(call.name)?._meta?.ui?.visibility ?? ['model', 'app'];
    if (!visibility.includes('app')) {
      host.appCalls.push({ name: call.name, refused: true });
      throw new Error(`tool ${call.name} is not callable by apps`);
    }
    const result = await forward(call, extra);
    host.appCalls.push({ name: call.name, arguments: call.arguments, result });
    step('app called', call.name);
    return result;
  };

  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
  await initialized;
  host.appInfo = bridge.getAppVersion() ?? null;
  host.appCapabilities = bridge.getAppCapabilities() ?? null;
  step('view initialized', host.appInfo);

  const args = { label: params.get('label') };
  await bridge.sendToolInput({ arguments: args });
  step('tool input sent', args);
  const result = await client.callTool({ name: tool.name, arguments: args });
  host.toolResult = result;
  await bridge.sendToolResult(result);
  step('tool result sent', result.content);
  host.state = 'rendered';
}

run().catch((e) => {
  host.state = 'failed';
  host.error = `${e?.constructor?.name}: ${e?.message}`;
  step('failed', host.error);
});
