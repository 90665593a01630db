// The TypeScript SDK v2 client (@modelcontextprotocol/client) against a sake stdio server,
// spawned as its child process. Run by tests/interop_stdio.rs:
//
//   SAKE_NODE_MODULES=<node_modules with the client> node stdio.mjs <revision> <server binary>
//
// <revision> is 2026-07-28 (pinned: server/discover probe, no initialize) or a handshake
// revision (initialize offering only that one). Prints one JSON line of what the client saw;
// the Rust test compares it exactly. Any failure exits non-zero.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { inWireOrder } from './wire-order.mjs';

const [revision, server] = process.argv.slice(2);
assert.ok(revision && server, 'usage: stdio.mjs <revision> <server binary>');
const modules = process.env.SAKE_NODE_MODULES;
assert.ok(modules, 'SAKE_NODE_MODULES must name the node_modules holding @modelcontextprotocol/client');
// ES modules ignore NODE_PATH: resolve the package from the given node_modules.
const require = createRequire(path.join(modules, 'sake-driver.cjs'));
const { Client, LOG_LEVEL_META_KEY } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');

const modern = revision === '2026-07-28';
const client = new Client(
  { name: 'sake-ts-interop', version: '1.0.0' },
  {
    ...(modern
      ? { versionNegotiation: { mode: { pin: '2026-07-28' }, probe: { timeoutMs: 10000 } } }
      : { supportedProtocolVersions: [revision] }),
    capabilities: { elicitation: { form: {} } },
  },
);
const errors = [];
client.onerror = e => errors.push(String(e?.message ?? e));
client.setRequestHandler('elicitation/create', async request => {
  assert.equal(request.params.message, 'What is your name?');
  return { action: 'accept', content: { name: 'Ada' } };
});
const logs = [];
client.setNotificationHandler('notifications/message', n => logs.push(n.params));

const transport = new StdioClientTransport({ command: server, args: [], stderr: 'ignore' });
const timeout = { timeout: 15000 };
await client.connect(transport, timeout);
inWireOrder(transport);

const { tools } = await client.listTools(undefined, timeout);
const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, timeout);
const read = await client.readResource({ uri: 'notes://hello' }, timeout);
const prompt = await client.getPrompt({ name: 'summarize', arguments: { text: 'TypeScript' } }, timeout);
// Legacy: a server-to-client request; 2026-07-28: input_required, answered and retried.
const greet = await client.callTool({ name: 'greet_me', arguments: {} }, timeout);

// Logs: per request on 2026-07-28, by logging/setLevel on a handshake revision.
if (!modern) await client.setLoggingLevel('info', timeout);
const progress = [];
const sleep = await client.callTool(
  { name: 'sleep', arguments: { millis: 40 }, ...(modern && { _meta: { [LOG_LEVEL_META_KEY]: 'info' } }) },
  { ...timeout, onprogress: p => progress.push(p.progress) },
);

const seen = {
  era: client.getProtocolEra(),
  version: client.getNegotiatedProtocolVersion(),
  serverVersion: client.getServerVersion(),
  tools: tools.map(t => t.name),
  add: { content: add.content, structuredContent: add.structuredContent },
  read: read.contents,
  prompt: prompt.messages,
  greet: greet.content,
  progress,
  logs,
  sleep: sleep.content,
  errors,
};
await client.close();
console.log(JSON.stringify(seen));
