// Drives a sake server with the TypeScript SDK v2 client (@modelcontextprotocol/client),
// pinned to one handshake revision, and prints what it saw as one JSON object on stdout.
//
//   node legacy.mjs <url> <2025-11-25|2025-06-18|2025-03-26>
//
// The client package is found in $SAKE_NODE_MODULES (else $NODE_PATH): ES modules ignore
// NODE_PATH, so it is imported by path. Every step runs under a timeout; any failure exits
// with status 1 and the reason on stderr.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, revision] = process.argv.slice(2);
if (!url || !revision) {
  console.error('usage: legacy.mjs <url> <revision>');
  process.exit(2);
}
const modules = process.env.SAKE_NODE_MODULES ?? process.env.NODE_PATH?.split(path.delimiter)[0];
if (!modules) {
  console.error('set SAKE_NODE_MODULES (scripts/test.sh does) to the node_modules holding @modelcontextprotocol/client');
  process.exit(2);
}
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(modules, '@modelcontextprotocol/client/dist/index.mjs')).href
);

const STEP_MS = 10_000;
/** Runs one step, failing it after STEP_MS. */
async function step(name, run) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: no answer within ${STEP_MS} ms`)), STEP_MS);
  });
  try {
    return await Promise.race([run(), timeout]);
  } catch (e) {
    if (e && typeof e === 'object') e.step ??= name;
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

const out = {};
const client = new Client(
  { name: 'sake-interop-ts', version: '1.0.0' },
  { supportedProtocolVersions: [revision], capabilities: { elicitation: {} } },
);
const elicitations = [];
client.setRequestHandler('elicitation/create', async request => {
  elicitations.push(request.params);
  return { action: 'accept', content: { name: 'Ada' } };
});
const transport = new StreamableHTTPClientTransport(new URL(url));

try {
  await step('connect', () => client.connect(transport));
  out.era = client.getProtocolEra();
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  out.serverInfo = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  out.instructions = client.getInstructions();
  out.sessionIdIsVisibleAscii = /^[\x21-\x7e]+$/.test(transport.sessionId ?? '');

  out.tools = await step('tools/list', () => client.listTools());
  out.call = await step('tools/call add', () => client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }));
  out.read = await step('resources/read', () => client.readResource({ uri: 'users://1/profile' }));
  out.prompt = await step('prompts/get', () =>
    client.getPrompt({ name: 'review', arguments: { code: 'fn main() {}', language: 'Rust' } }),
  );
  out.elicited = await step('tools/call greet_user', () => client.callTool({ name: 'greet_user', arguments: {} }));
  out.elicitations = elicitations;

  // logging/setLevel: afterwards only messages at or above the level arrive.
  const logs = [];
  client.setNotificationHandler('notifications/message', n => logs.push(n.params));
  out.setLevel = await step('logging/setLevel', () => client.setLoggingLevel('warning'));
  out.logged = await step('tools/call log_twice', () => client.callTool({ name: 'log_twice', arguments: {} }));
  out.logs = logs;

  try {
    await step('resources/read missing', () => client.readResource({ uri: 'users://9/profile' }));
    out.missing = 'no error';
  } catch (e) {
    // `uri` exists only on the SDK's ResourceNotFoundError, which it builds from sake's
    // -32002 with data.uri (and reports with the 2026-07-28 code, -32602).
    out.missing = { code: e.code ?? null, message: e.message, data: e.data ?? null, uri: e.uri ?? null };
  }

  await step('DELETE', () => transport.terminateSession());
  out.sessionAfterDelete = transport.sessionId ?? null;
  await step('close', () => client.close());
} catch (e) {
  console.error(`${e?.step ?? 'driver'}: ${e?.stack ?? e}`);
  try {
    await client.close();
  } catch {}
  process.exit(1);
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
