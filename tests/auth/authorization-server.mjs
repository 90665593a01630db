// A real OAuth 2.1 / OpenID Connect authorization server for sake's authorization tests:
// oidc-provider (an OpenID Certified implementation, pinned in scripts/peers/package.json)
// on 127.0.0.1, configured the way an MCP deployment uses one. oidc-provider issues every
// token; this script only configures it and answers its interaction prompts automatically.
//
//   node tests/auth/authorization-server.mjs [port]
//
// Environment:
//   SAKE_NODE_MODULES  the node_modules holding oidc-provider (else the first $NODE_PATH entry);
//                      ES modules ignore NODE_PATH, so the package is imported by path.
//   AS_PORT            the port when none is given as an argument; absent or 0: a free port.
//   AS_ISSUER_PATH     a path for the issuer (e.g. `/tenant1`): the issuer is then
//                      http://127.0.0.1:<port>/tenant1 and the metadata is served at every
//                      well-known form (RFC 8414 path insertion, OpenID Connect path insertion
//                      and path appending).
//   AS_SCOPES          the scopes a resource server may be granted (default `mcp:tools admin`).
//   AS_USER            who logs in during the authorization-code flow when the request has no
//                      `login_hint` (default `alice`).
//   AS_ACCESS_TOKEN_TTL  access token lifetime in seconds (default 600).
//   AS_OPAQUE_TOKEN_TTL  lifetime of access tokens issued without a resource (for the userinfo
//                      endpoint; default 3600).
//   AS_REGISTRATION    `off`: no dynamic registration (an upstream provider of the authorization
//                      proxy, which lets no client register itself).
//   AS_CLIENTS         a JSON list of more static clients (oidc-provider client metadata), e.g.
//                      the proxy's confidential client with its exact callback URL.
//   AS_LOGIN_FORM      `1`: the login prompt is an HTML form (field `login`) that the user agent
//                      posts, as a person would, instead of logging in AS_USER by redirect.
//   AS_INTROSPECTION_DELAY_MS  holds each introspection request this long before oidc-provider
//                      answers it (a slow authorization server, for the tests of how many a
//                      resource server has in flight).
//   AS_ID_JAG          `1`: the token endpoint also takes the token exchange grant (RFC 8693) of
//                      enterprise-managed authorization: a client trades an ID token this
//                      provider issued to it for an identity assertion authorization grant
//                      (ID-JAG, typ oauth-id-jag+jwt, signed with the provider's key) for the
//                      `audience` and `resource` it names.
//
// `GET /_test/introspections` (outside the issuer) answers how many introspection requests
// arrived so far and the most that were in flight at once: {"total": n, "maxInFlight": m}.
//
// Once listening it prints one line on stdout and keeps running until killed:
//
//   ready http://127.0.0.1:<port>[<issuer path>]
//
// What it is configured with:
// - Resource indicators (RFC 8707): a token requested for a resource that is an http URL on
//   127.0.0.1 or localhost (any port and path, e.g. http://127.0.0.1:4000/mcp) is an RFC 9068
//   JWT access token signed with RS256, whose `aud` is that resource and whose `scope` is the
//   requested scopes limited to AS_SCOPES. Any other resource is refused (`invalid_target`).
//   A resource whose path ends in `/opaque` gets an opaque token instead (for introspection).
// - Grants: client_credentials; authorization_code with PKCE (S256) required of every client;
//   refresh_token (issued to every client allowed the grant).
// - Dynamic client registration (RFC 7591), open (no initial access token), at /reg.
// - Token introspection (RFC 7662) at /token/introspection and revocation at /token/revocation.
// - Pre-registered clients:
//     sake-confidential / sake-confidential-secret  client_secret_basic; client_credentials,
//                                 authorization_code and refresh_token; redirect
//                                 http://127.0.0.1/callback (any loopback port).
//     sake-post / sake-post-secret  the same with client_secret_post.
//     sake-short / sake-short-secret  client_credentials only; its access tokens live 2 s.
//     sake-public                 a public (native) client: no secret, authorization_code and
//                                 refresh_token; redirect http://127.0.0.1/callback (any port).
// - Interactions: following the authorization URL needs no browser. The login prompt logs in
//   AS_USER (or the request's `login_hint`) and the consent prompt grants everything requested;
//   each answers with a redirect, so a client that follows redirects and keeps cookies ends at
//   the client's redirect_uri with `code`, `state` and `iss`.
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.SAKE_NODE_MODULES ?? process.env.NODE_PATH?.split(path.delimiter)[0];
if (!modules) {
  console.error('set SAKE_NODE_MODULES (scripts/test.sh does) to the node_modules holding oidc-provider');
  process.exit(2);
}
const { Provider, errors } = await import(
  pathToFileURL(path.join(modules, 'oidc-provider/lib/index.js')).href
);

const portArg = process.argv[2] ?? process.env.AS_PORT ?? '0';
const port = Number(portArg);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`usage: authorization-server.mjs [port]; ${JSON.stringify(portArg)} is not a port`);
  process.exit(2);
}
const issuerPath = (process.env.AS_ISSUER_PATH ?? '').replace(/\/+$/, '');
if (issuerPath && !/^\/[A-Za-z0-9._~/-]+$/.test(issuerPath)) {
  console.error(`AS_ISSUER_PATH must be a path such as /tenant1, not ${JSON.stringify(issuerPath)}`);
  process.exit(2);
}
const scopes = (process.env.AS_SCOPES ?? 'mcp:tools admin').split(/\s+/).filter(Boolean);
const defaultUser = process.env.AS_USER ?? 'alice';
const accessTokenTTL = Number(process.env.AS_ACCESS_TOKEN_TTL ?? '600');
const opaqueTokenTTL = Number(process.env.AS_OPAQUE_TOKEN_TTL ?? '3600');
const registrationOn = process.env.AS_REGISTRATION !== 'off';
const loginForm = process.env.AS_LOGIN_FORM === '1';
const idJag = process.env.AS_ID_JAG === '1';
const extraClients = JSON.parse(process.env.AS_CLIENTS ?? '[]');
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const SHORT_TTL = 2;
const introspectionDelay = Number(process.env.AS_INTROSPECTION_DELAY_MS ?? '0');
const introspections = { total: 0, inFlight: 0, maxInFlight: 0 };

/** Whether `resource` names a resource server on this machine: http(s) on a loopback host. */
function isLoopbackResource(resource) {
  let url;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:')
    && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)
    && url.hash === '' && url.username === '' && url.password === '';
}

// One RS256 signing key, fresh for every run.
const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: `rs256-${crypto.randomBytes(4).toString('hex')}`,
  alg: 'RS256',
  use: 'sig',
};

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const origin = `http://127.0.0.1:${server.address().port}`;
const issuer = `${origin}${issuerPath}`;

const loopbackCallback = 'http://127.0.0.1/callback';
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'sake-confidential',
      client_secret: 'sake-confidential-secret',
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['client_credentials', 'authorization_code', 'refresh_token', ...(idJag ? [TOKEN_EXCHANGE] : [])],
      response_types: ['code'],
      application_type: 'native',
      redirect_uris: [loopbackCallback],
    },
    {
      client_id: 'sake-post',
      client_secret: 'sake-post-secret',
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'native',
      redirect_uris: [loopbackCallback],
    },
    {
      client_id: 'sake-short',
      client_secret: 'sake-short-secret',
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: 'sake-public',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'native',
      redirect_uris: [loopbackCallback],
    },
    ...extraClients,
  ],
  jwks: { keys: [signingKey] },
  ttl: {
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? opaqueTokenTTL,
  },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  scopes: ['openid', 'offline_access'],
  claims: { openid: ['sub'] },
  async findAccount(_ctx, sub) {
    return { accountId: sub, async claims() { return { sub }; } };
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: registrationOn, initialAccessToken: false },
    resourceIndicators: {
      enabled: true,
      async defaultResource(_ctx, _client, oneOf) {
        return oneOf;
      },
      async useGrantedResource() {
        return true;
      },
      async getResourceServerInfo(_ctx, resource, client) {
        if (!isLoopbackResource(resource)) {
          throw new errors.InvalidTarget(`${resource} is not a resource server of this authorization server`);
        }
        const opaque = new URL(resource).pathname.endsWith('/opaque');
        return {
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: client?.clientId === 'sake-short' ? SHORT_TTL : accessTokenTTL,
          ...(opaque
            ? { accessTokenFormat: 'opaque' }
            : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
        };
      },
    },
  },
  pkce: { required: () => true },
  async issueRefreshToken(_ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  clientBasedCORS: () => true,
  interactions: {
    url: (_ctx, interaction) => `${issuerPath}/interaction/${interaction.uid}`,
  },
});

/** The body of a form post, as an object. */
async function formBody(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 16384) throw new Error('form too large');
  }
  return Object.fromEntries(new URLSearchParams(body));
}

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Answers an interaction prompt: login (by redirect as the hinted user, or through a form
 * with AS_LOGIN_FORM), consent to all. */
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login' && loginForm && req.method === 'GET') {
    const action = `${issuerPath}/interaction/${details.uid}`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Sign in</title><h1>Sign in to ${escapeHtml(issuer)}</h1>
<form method="post" action="${escapeHtml(action)}"><input name="login" value=""><input type="password" name="password" value="">
<button type="submit" name="submit" value="1">Sign in</button></form>`);
    return;
  }
  if (prompt.name === 'login') {
    const posted = req.method === 'POST' ? await formBody(req) : {};
    result = { login: { accountId: posted.login || params.login_hint || defaultUser } };
  } else if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
    if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    for (const [resource, granted] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, granted.join(' '));
    }
    const grantId = await grant.save();
    result = { consent: details.grantId ? {} : { grantId } };
  } else {
    result = { error: 'access_denied', error_description: `unexpected prompt ${prompt.name}` };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

if (idJag) {
  const b64url = (b) => Buffer.from(b).toString('base64url');
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const p = ctx.oidc.params;
    const fail = (error, error_description) => {
      ctx.status = 400;
      ctx.body = { error, error_description };
    };
    if (p.requested_token_type !== 'urn:ietf:params:oauth:token-type:id-jag') {
      return fail('invalid_request', 'requested_token_type must be an ID-JAG');
    }
    if (p.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token' || !p.subject_token) {
      return fail('invalid_request', 'subject_token must be an ID token');
    }
    // The subject token: an ID token this provider issued to this client.
    const [h, pl, sig] = String(p.subject_token).split('.');
    const ok = sig && crypto.verify('sha256', Buffer.from(`${h}.${pl}`), publicKey, Buffer.from(sig, 'base64url'));
    const claims = ok ? JSON.parse(Buffer.from(pl, 'base64url').toString()) : null;
    const clientId = ctx.oidc.client.clientId;
    const now = Math.floor(Date.now() / 1000);
    if (!claims || claims.iss !== issuer || claims.aud !== clientId || claims.exp < now) {
      return fail('invalid_grant', 'the subject token is not a valid ID token of this provider for this client');
    }
    if (!p.audience || !p.resource) return fail('invalid_request', 'audience and resource are required');
    const header = { alg: 'RS256', typ: 'oauth-id-jag+jwt', kid: signingKey.kid };
    const payload = {
      iss: issuer, sub: claims.sub, aud: p.audience, client_id: clientId, resource: p.resource,
      ...(p.scope ? { scope: p.scope } : {}),
      jti: crypto.randomBytes(12).toString('hex'), iat: now, exp: now + 300,
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
    const signature = crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url');
    ctx.body = {
      access_token: `${input}.${signature}`,
      issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A',
      expires_in: 300,
    };
  }, ['requested_token_type', 'subject_token', 'subject_token_type', 'audience', 'resource', 'scope']);
}

provider.on('server_error', (_ctx, err) => console.error('server_error', err));
const callback = provider.callback();
const wellKnown = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'];
server.on('request', async (req, res) => {
  try {
    const { pathname } = new URL(req.url, origin);
    if (pathname === '/_test/introspections') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ total: introspections.total, maxInFlight: introspections.maxInFlight }));
      return;
    }
    if (pathname.endsWith('/token/introspection')) {
      introspections.total += 1;
      introspections.inFlight += 1;
      introspections.maxInFlight = Math.max(introspections.maxInFlight, introspections.inFlight);
      res.on('close', () => { introspections.inFlight -= 1; });
      if (introspectionDelay > 0) await new Promise((r) => setTimeout(r, introspectionDelay));
    }
    if (issuerPath) {
      // The provider is mounted at the issuer path; the path-inserted well-known forms
      // (RFC 8414 section 3.1) live outside it and resolve to the provider's own routes.
      const inserted = wellKnown.find((w) => pathname === `${w}${issuerPath}`);
      if (inserted) {
        req.originalUrl = req.url;
        req.baseUrl = issuerPath;
        req.url = inserted;
      } else if (pathname === issuerPath || pathname.startsWith(`${issuerPath}/`)) {
        req.originalUrl = req.url;
        req.baseUrl = issuerPath;
        req.url = req.url.slice(issuerPath.length) || '/';
      } else {
        res.writeHead(404).end();
        return;
      }
    }
    if (new URL(req.url, origin).pathname.startsWith('/interaction/')) {
      await interact(req, res);
      return;
    }
    callback(req, res);
  } catch (e) {
    console.error(e);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(e?.message ?? e));
  }
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
console.log(`ready ${issuer}`);
