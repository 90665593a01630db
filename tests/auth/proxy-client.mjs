// The official TypeScript SDK client (@modelcontextprotocol/client, pinned in
// scripts/peers/package.json) signing in to an MCP server through sake's authorization proxy,
// from a bare 401.
//
//   NODE_PATH=<node_modules> node proxy-client.mjs <mcp url> <2026-07-28|2025-11-25> <callback port>
//
// Started by sake-runtime/tests/auth_proxy.rs, which is the user's browser: this script prints
// `AUTHORIZE <url>` when the SDK wants the user to authorize; the test signs in there and opens
// the redirect to http://127.0.0.1:<callback port>/callback, which this script serves. Each step
// prints one JSON line ({"step": …, "value": …}); a failure prints {"step", "error"} and exits 1.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, StreamableHTTPClientTransport, UnauthorizedError } = require('@modelcontextprotocol/client');

const [url, revision, portArg] = process.argv.slice(2);
const redirect = `http://127.0.0.1:${portArg}/callback`;
const out = (step, value) => console.log(JSON.stringify({ step, value }));

const waiting = [];
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in; you may close this page');
  const next = waiting.shift();
  if (next) next(new URL(req.url, redirect));
});
await new Promise((r) => server.listen(Number(portArg), '127.0.0.1', r));
const callback = () => new Promise((resolve) => waiting.push(resolve));

let info;
let tokens;
let verifier;
let registrations = 0;
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK e2e',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; registrations += 1; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  redirectToAuthorization(u) { console.log(`AUTHORIZE ${u}`); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

const options = revision === '2026-07-28'
  ? { versionNegotiation: { mode: { pin: '2026-07-28' } } }
  : { supportedProtocolVersions: [revision] };

let transport;
let client;
async function connect() {
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  client = new Client({ name: 'ts-proxy-e2e', version: '1.0.0' }, options);
  await client.connect(transport);
}

/** Runs `op`; when the SDK needs the user, waits for the browser's callback and retries. */
async function authorized(op) {
  for (let i = 0; i < 3; i += 1) {
    try {
      return await op();
    } catch (e) {
      if (!(e instanceof UnauthorizedError) && !/nauthorized|insufficient_scope/.test(String(e?.message))) throw e;
      const back = await callback();
      await transport.finishAuth(back.searchParams.get('code'), back.searchParams.get('iss') ?? undefined);
      await connect();
    }
  }
  throw new Error('still unauthorized after signing in three times');
}

let step = 'connect';
try {
  await authorized(connect);
  out('revision', client.getNegotiatedProtocolVersion?.() ?? revision);
  step = 'whoami';
  const who = await authorized(() => client.callTool({ name: 'whoami', arguments: {} }));
  out('whoami', who.structuredContent);
  // Step-up: admin_report needs `admin`; the 403's insufficient_scope asks for it, on both eras.
  step = 'admin_report';
  const report = await authorized(() => client.callTool({ name: 'admin_report', arguments: {} }));
  out('admin_report', report.content.filter((c) => c.type === 'text').map((c) => c.text));
  out('registrations', registrations);
  out('scope', tokens?.scope ?? null);
  await client.close();
} catch (e) {
  console.log(JSON.stringify({ step, error: String(e?.stack ?? e) }));
  process.exitCode = 1;
} finally {
  server.close();
}
process.exit(process.exitCode ?? 0);
