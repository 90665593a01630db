// Drives a sake server with the official TypeScript SDK v2 client pinned to 2026-07-28.
//
//   NODE_PATH=<node_modules with @modelcontextprotocol/client> node modern.mjs <url>
//
// Started by tests/interop_ts_modern.rs, which serves the tools named below and compares
// what this prints, one JSON object per line ({"step": …, "value": …}), with what it expects.
// The client validates every result it receives (resultType, ttlMs/cacheScope, content
// blocks, structuredContent against outputSchema), so a malformed answer fails its step.
// Every step runs under a timeout; any failure prints {"step", "error"} and exits 1.

import { createRequire } from 'node:module';
import { inWireOrder } from './wire-order.mjs';

// ESM ignores NODE_PATH; CommonJS `require` honours it.
const require = createRequire(import.meta.url);
const { Client, StreamableHTTPClientTransport, ProtocolError } = require('@modelcontextprotocol/client');

const url = process.argv[2];
if (!url) {
  console.error('usage: modern.mjs <url of the MCP endpoint>');
  process.exit(2);
}

const STEP_TIMEOUT_MS = 10_000;
const out = (step, value) => console.log(JSON.stringify({ step, value }));

async function step(name, run) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  try {
    const value = await Promise.race([run(), timeout]);
    out(name, value);
    return value;
  } catch (e) {
    console.log(JSON.stringify({ step: name, error: `${e?.constructor?.name}: ${e?.message}`, code: e?.code, data: e?.data }));
    process.exit(1);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the first value `poll` returns that is not undefined. */
function waitFor(poll) {
  return new Promise(resolve => {
    const tick = () => {
      const v = poll();
      if (v !== undefined) resolve(v);
      else setTimeout(tick, 10);
    };
    tick();
  });
}

const client = new Client(
  { name: 'sake-interop-ts', version: '1.0.0' },
  {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
  },
);
client.onerror = e => console.error('client error:', e?.message ?? e);

// What the server asks through MRTR `inputRequests`, answered by the same handler a
// handshake-era client would use for a JSON-RPC request.
const asked = [];
client.setRequestHandler('elicitation/create', async request => {
  asked.push(request.params);
  return { action: 'accept', content: { name: 'Ada' } };
});
const notifications = [];
client.setNotificationHandler('notifications/tools/list_changed', n => notifications.push(n));

await step('connect', async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  inWireOrder(transport);
  const d = client.getDiscoverResult();
  return {
    era: client.getProtocolEra(),
    version: client.getNegotiatedProtocolVersion(),
    supportedVersions: d.supportedVersions,
    capabilities: client.getServerCapabilities(),
    serverInfo: client.getServerVersion(),
    instructions: client.getInstructions(),
  };
});

await step('tools/list', async () => (await client.listTools()).tools);

await step('tools/call add', () => client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }));

await step('tools/call greet (MRTR)', async () => {
  const result = await client.callTool({ name: 'greet', arguments: {} });
  return { result, asked };
});

// The client sends Mcp-Param-Region from the cached tools/list, Base64-encoded (non-ASCII).
await step('tools/call regional (Mcp-Param)', () =>
  client.callTool({ name: 'regional', arguments: { region: 'Zürich' } }),
);

await step('tools/call count (progress)', async () => {
  const progress = [];
  const result = await client.callTool(
    { name: 'count', arguments: { to: 3 } },
    { onprogress: p => progress.push(p) },
  );
  return { result, progress };
});

await step('resources/read', () => client.readResource({ uri: 'docs://about' }));

await step('tools/call unknown (error)', async () => {
  try {
    await client.callTool({ name: 'nope', arguments: {} });
    return 'no error';
  } catch (e) {
    return { protocolError: e instanceof ProtocolError, code: e.code, data: e.data };
  }
});

await step('subscriptions/listen', async () => {
  const sub = await client.listen({ toolsListChanged: true, promptsListChanged: true });
  const honoredFilter = sub.honoredFilter;
  const touched = await client.callTool({ name: 'touch', arguments: {} });
  const notification = await waitFor(() => notifications[0]);
  await sub.close();
  return { honoredFilter, touched: touched.content, notification, closed: await sub.closed };
});

await step('close', async () => {
  await client.close();
  return 'closed';
});
