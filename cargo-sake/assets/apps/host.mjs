// The MCP Apps preview of `cargo sake dev` (docs/apps.md): a host page on the dev server's own
// port, built on the official pieces bundled in bridge.js (the global `SakeAppsBridge`): the
// TypeScript SDK client talks to the server, the host bridge (AppBridge of
// @modelcontextprotocol/ext-apps) talks to the view.
//
// It lists every tool with a view that the model may call, makes a form from the chosen tool's
// input schema (form.mjs), calls the tool, and renders its view with the result in a sandbox
// proxy on a second origin (the other loopback name of this port), under the view's Content
// Security Policy. Calls the view makes go to the server when the tool is one apps may call.
// Each message is logged. When the server is rebuilt (`/_sake/apps/state` names another
// build), the page reloads and calls the same tool with the same inputs again.
//
// What happens is kept in `window.sakeApps` too (read by cargo-sake/tests/apps.rs).

import { argumentsOf, fieldsOf } from '/_sake/apps/form.mjs';

const {
  AppBridge,
  Client,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  StreamableHTTPClientTransport,
  getToolUiResourceUri,
} = window.SakeAppsBridge;

const HOST_INFO = { name: 'cargo-sake-dev-apps-preview', version: '1.0.0' };
const UI = 'io.modelcontextprotocol/ui';
const SAVED = 'sake-apps-preview';
const POLL_MS = 500;

const $ = (id) => document.getElementById(id);
const app = {
  state: 'starting',
  error: null,
  build: null,
  reloads: 0,
  tools: [],
  tool: null,
  values: null,
  args: null,
  result: null,
  appCalls: [],
  log: [],
};
window.sakeApps = app;

function log(line) {
  app.log.push(line);
  const item = document.createElement('li');
  item.textContent = line;
  $('log').appendChild(item);
  item.scrollIntoView({ block: 'nearest' });
}

/** A JSON-RPC message, for the log: its method, or what it answers. */
function describe(message) {
  if (message?.method) {
    const name = message.params?.name;
    return name ? `${message.method} ${name}` : message.method;
  }
  if (message && 'error' in message) return `error #${message.id}: ${message.error?.message}`;
  if (message && 'result' in message) return `result #${message.id}`;
  return JSON.stringify(message);
}

function saved() {
  try {
    return JSON.parse(sessionStorage.getItem(SAVED) ?? 'null');
  } catch {
    return null;
  }
}

/** The second origin: this port under the other loopback name. */
function sandboxOrigin() {
  const other = window.location.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  return `${window.location.protocol}//${other}:${window.location.port}`;
}

/** Unpadded base64url of the JSON of `value` (the sandbox's `csp` parameter). */
function base64url(value) {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

let client;
let byName = new Map();
let current = null;

async function start() {
  const state = await (await fetch('/_sake/apps/state', { cache: 'no-store' })).json();
  app.build = state.build;
  const before = saved();
  app.reloads = before?.reloads ?? 0;
  client = new Client(HOST_INFO, {
    capabilities: { extensions: { [UI]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(state.mcp, window.location.origin)));
  const info = client.getServerVersion();
  const revision = client.getNegotiatedProtocolVersion();
  $('server').textContent = `${info?.name ?? 'server'} ${info?.version ?? ''} · ${new URL(state.mcp, window.location.origin)} · MCP ${revision}`;
  log(`connected to ${info?.name ?? 'the server'} (MCP ${revision})`);

  const { tools } = await client.listTools();
  byName = new Map(tools.map((t) => [t.name, t]));
  const shown = tools.filter((t) => {
    const visibility = t._meta?.ui?.visibility ?? ['model', 'app'];
    return getToolUiResourceUri(t) && visibility.includes('model');
  });
  app.tools = shown.map((t) => t.name);
  log(`tools with a view: ${app.tools.join(', ') || 'none'}`);
  const list = $('tools');
  for (const tool of shown) {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = tool.name;
    button.dataset.tool = tool.name;
    button.addEventListener('click', () => choose(tool.name));
    item.appendChild(button);
    list.appendChild(item);
  }
  if (shown.length === 0) {
    list.textContent = 'No tool of this server has a view (#[tool(ui = …)]).';
  }
  app.state = 'ready';
  setInterval(poll, POLL_MS);

  if (before?.tool && byName.has(before.tool)) {
    choose(before.tool, before.values);
    const why = before.rebuilt ? 'the server was rebuilt: ' : '';
    log(`${why}${before.tool} again with the same inputs`);
    await call(before.tool, before.values);
  } else if (shown.length === 1) {
    choose(shown[0].name);
  }
}

/** Shows the form of `name`, filled with `values` (else the schema's defaults). */
function choose(name, values) {
  const tool = byName.get(name);
  app.tool = name;
  for (const b of document.querySelectorAll('nav button')) {
    b.setAttribute('aria-current', String(b.dataset.tool === name));
  }
  $('call').hidden = false;
  $('tool-name').textContent = tool.title ?? name;
  $('tool-description').textContent = tool.description ?? '';
  $('form-error').textContent = '';
  const fields = fieldsOf(tool.inputSchema);
  const box = $('fields');
  box.replaceChildren();
  for (const field of fields) {
    const label = document.createElement('label');
    label.htmlFor = `field-${field.name}`;
    label.textContent = field.label + (field.required ? ' *' : '');
    if (field.description) {
      const hint = document.createElement('span');
      hint.className = 'hint';
      hint.textContent = field.description;
      label.appendChild(hint);
    }
    let input;
    if (field.options) {
      input = document.createElement('select');
      for (const option of field.options) {
        const o = document.createElement('option');
        o.value = option;
        o.textContent = option === '' ? '—' : option;
        input.appendChild(o);
      }
    } else if (field.kind === 'json') {
      input = document.createElement('textarea');
      input.placeholder = 'JSON';
    } else {
      input = document.createElement('input');
      input.type = field.kind === 'text' ? 'text' : 'number';
      if (field.kind === 'number') input.step = 'any';
    }
    input.id = `field-${field.name}`;
    input.name = field.name;
    input.value = values?.[field.name] ?? field.initial;
    box.append(label, input);
  }
  $('form').onsubmit = (event) => {
    event.preventDefault();
    const now = {};
    for (const field of fields) now[field.name] = $(`field-${field.name}`).value;
    call(name, now).catch(fail);
  };
}

/** Calls `name` with the form's `values` and renders its view with the result. */
async function call(name, values) {
  const tool = byName.get(name);
  let args;
  try {
    args = argumentsOf(fieldsOf(tool.inputSchema), values);
  } catch (e) {
    $('form-error').textContent = e.message;
    log(`not called: ${e.message}`);
    return;
  }
  $('form-error').textContent = '';
  app.values = values;
  app.args = args;
  app.state = 'calling';
  sessionStorage.setItem(SAVED, JSON.stringify({ tool: name, values, reloads: app.reloads }));
  current?.close();
  current = null;

  const uri = getToolUiResourceUri(tool);
  log(`host → server resources/read ${uri}`);
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (read.contents.length !== 1 || content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`the view ${uri} is not one ${RESOURCE_MIME_TYPE} document`);
  }
  const html = 'blob' in content ? new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0))) : content.text;
  const ui = content._meta?.ui ?? {};

  const iframe = document.createElement('iframe');
  iframe.id = 'view';
  iframe.title = `the view of ${name}`;
  iframe.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
  if (ui.prefersBorder === false) iframe.classList.add('borderless');
  const sandbox = new URL('/_sake/apps/sandbox', sandboxOrigin());
  sandbox.searchParams.set('csp', base64url(ui.csp ?? null));
  const proxyReady = new Promise((resolve) => {
    const listener = (event) => {
      if (event.source === iframe.contentWindow && event.data?.method === 'ui/notifications/sandbox-proxy-ready') {
        window.removeEventListener('message', listener);
        resolve();
      }
    };
    window.addEventListener('message', listener);
  });
  iframe.src = sandbox.href;
  $('stage').replaceChildren(iframe);
  await proxyReady;
  log(`sandbox ready on ${sandbox.origin}`);

  const caps = client.getServerCapabilities();
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    { openLinks: {}, serverTools: caps.tools, serverResources: caps.resources, logging: {} },
    {
      hostContext: {
        theme: window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        platform: 'web',
        containerDimensions: { maxHeight: 640, width: 480 },
        locale: navigator.language,
      },
    },
  );
  bridge.addEventListener('sizechange', ({ height }) => {
    if (height !== undefined) iframe.style.height = `${height}px`;
  });
  bridge.addEventListener('loggingmessage', (m) => log(`view log (${m.level}): ${JSON.stringify(m.data)}`));
  const initialized = new Promise((resolve) => bridge.addEventListener('initialized', resolve));

  const transport = new PostMessageTransport(iframe.contentWindow, iframe.contentWindow);
  await bridge.connect(transport);
  // What the view calls goes to the server only for a tool whose visibility includes "app"
  // (connect() installed the bridge's forwarding to the client: it is wrapped, not replaced).
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (request, extra) => {
    const visibility = byName.get(request.name)?._meta?.ui?.visibility ?? ['model', 'app'];
    if (!visibility.includes('app')) {
      app.appCalls.push({ name: request.name, refused: true });
      log(`refused the view's call of ${request.name}: apps may not call it`);
      throw new Error(`tool ${request.name} is not callable by apps`);
    }
    log(`host → server tools/call ${request.name} (for the view)`);
    if (!forward) throw new Error(`the server has no tools`);
    const result = await forward(request, extra);
    app.appCalls.push({ name: request.name, arguments: request.arguments ?? null, result });
    log(`server → host result of ${request.name}${result.isError ? ' (isError)' : ''}`);
    return result;
  };
  // Every message between the page and the view, in the log.
  const received = transport.onmessage;
  transport.onmessage = (message, extra) => {
    log(`view → host ${describe(message)}`);
    received?.(message, extra);
  };
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    log(`host → view ${describe(message)}`);
    return send(message, options);
  };
  current = { close: () => bridge.close().catch(() => {}) };

  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  log(`host → server tools/call ${name} ${JSON.stringify(args)}`);
  const result = await client.callTool({ name, arguments: args });
  app.result = result;
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
  log(`server → host result of ${name}${result.isError ? ' (isError)' : ''}: ${text}`);
  await bridge.sendToolResult(result);
  app.state = 'rendered';
}

async function poll() {
  let state;
  try {
    state = await (await fetch('/_sake/apps/state', { cache: 'no-store' })).json();
  } catch {
    return; // restarting
  }
  if (state.build !== app.build) {
    const before = saved();
    if (before) {
      before.reloads = (before.reloads ?? 0) + 1;
      before.rebuilt = true;
      sessionStorage.setItem(SAVED, JSON.stringify(before));
    }
    app.state = 'reloading';
    log('the server was rebuilt: reloading');
    window.location.reload();
  }
}

function fail(e) {
  app.state = 'failed';
  app.error = `${e?.constructor?.name}: ${e?.message}`;
  log(`failed: ${app.error}`);
}

start().catch(fail);
