// The OAuth interop client: the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned by interop/package-lock.json) goes through MCP authorization against presa-fixture in
// its `--auth ISSUER` mode, with tokens from a real authorization server (tests/authz/server.mjs,
// oauth2-mock-server), and prints one line per step.
//
// Usage (interop/run starts the authorization server and the fixture, then does this):
//   node oauth-client.mjs --transport http --url http://127.0.0.1:<port>/mcp
//                         --issuer http://127.0.0.1:<port> [--wire-log FILE]
//   node oauth-client.mjs --transport stdio --command …   (prints one skip line: HTTP only)
//
// Steps, each an `interop: ok|FAIL oauth-ts http <step>` line (common.mjs):
//   - without a token: 401 whose challenge names the protected resource metadata, and that
//     document names the issuer and the fixture's URL as `resource`;
//   - the authorization code flow with PKCE, pinned to 2026-07-28: connect gets 401, the SDK
//     discovers the authorization server from the challenge and "redirects" (the provider
//     below follows the authorize URL itself: the server approves at once with a 302), the
//     lane hands the code to `transport.finishAuth`, connects again and calls tools;
//   - step-up: a tool that needs `mcp:write` gets 403 `insufficient_scope`, the SDK
//     authorizes again with the union scope, the call then succeeds;
//   - client_credentials with the SDK's own ClientCredentialsProvider (no host code: the
//     transport gets and replaces tokens by itself);
//   - the legacy era (the SDK's default connect(): initialize, 2025-11-25) with the code
//     flow, one call, and the session's DELETE.
// Exit code 0 when every step is ok, 1 otherwise, 2 on bad arguments.
//
// Tokens never appear in step lines (a failure describes a token by its scope and claims
// only); the wire log (--wire-log) records every HTTP exchange verbatim, tokens included:
// they are the throwaway tokens of a throwaway authorization server.

import {
  ClientCredentialsProvider, Client, StreamableHTTPClientTransport, UnauthorizedError,
} from '@modelcontextprotocol/client';
import { STEP_TIMEOUT_MS, Steps, check, describe, firstText, loggingFetch, parseArgs, quote, wireLog, withTimeout } from './common.mjs';

const LANE = 'oauth-ts';
const REVISION = '2026-07-28';
const LEGACY_REVISION = '2025-11-25';
const READ = 'mcp:read';
const WRITE = 'mcp:write';
/** The code flow's client (pre-registered: the authorization server accepts any client id). */
const CODE_CLIENT_ID = 'presa-interop-oauth';
/** Never served: the provider reads the code from the authorize response's Location header. */
const REDIRECT_URI = 'http://127.0.0.1:1/callback';
/** The client_credentials client; the token's `sub`, so the fixture's principal. */
const SERVICE_CLIENT = { id: 'presa-interop-service', secret: 'presa-interop-service-secret' };
/** The user the authorization server signs code-flow tokens for. */
const USER = 'johndoe';

const opts = parseArgs('oauth-client.mjs');
const steps = new Steps(LANE, opts.transport);
if (opts.transport !== 'http') {
  steps.skip('authorization (OAuth 2.1)', 'HTTP only: over stdio a server takes its credentials from the environment');
  process.exit(0);
}
if (!opts.issuer) {
  process.stderr.write('oauth-client.mjs: --transport http needs --issuer\n');
  process.exit(2);
}
const url = new URL(opts.url);
const issuer = opts.issuer;
const wire = wireLog(opts['wire-log']);

// --- observing the wire ------------------------------------------------------------------
/**
 * Every HTTP exchange of the lane (the SDK's and the provider's), in order: method, URL,
 * request body (as text), status and `WWW-Authenticate`. Steps look at the slice they caused.
 */
const exchanges = [];
const logged = loggingFetch(wire);
async function observingFetch(input, init = {}) {
  const target = typeof input === 'string' ? input : input.url ?? String(input);
  const body = init.body === undefined || init.body === null ? undefined : String(init.body);
  const entry = { method: init.method ?? 'GET', url: new URL(target), body };
  exchanges.push(entry);
  const response = await logged(input, init);
  entry.status = response.status;
  entry.wwwAuthenticate = response.headers.get('www-authenticate') ?? undefined;
  return response;
}
const since = (mark) => exchanges.slice(mark);
const tokenRequests = (list) => list
  .filter((e) => e.method === 'POST' && e.url.pathname === '/token' && e.url.origin === new URL(issuer).origin)
  .map((e) => new URLSearchParams(e.body ?? ''));

/** The claims of a JWT access token (read, not verified: the fixture verifies it). */
function claimsOf(token) {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
  } catch {
    throw new Error('the access token is not a JWT');
  }
}
/** A token response without its secrets, for messages. */
const describeTokens = (t) => (t ? quote({ token_type: t.token_type, scope: t.scope, expires_in: t.expires_in }) : 'none');
/** Space-separated scopes as a sorted list, for comparing. */
const scopeSet = (s) => [...new Set(String(s ?? '').split(' ').filter(Boolean))].sort();
const sameScopes = (a, b) => quote(scopeSet(a)) === quote(scopeSet(b));

// --- the provider of the code flow ---------------------------------------------------------
/**
 * An OAuthClientProvider for a pre-registered public client (no dynamic registration) whose
 * "browser" is a fetch: `redirectToAuthorization` requests the authorize URL without
 * following the redirect and keeps the callback's query (code, state) from its Location
 * header, for the lane to hand to `transport.finishAuth`. Everything else is kept in memory.
 */
class HeadlessProvider {
  /** Every authorize URL the SDK sent the "user" to, in order. */
  authorizeUrls = [];
  /** The query of the last redirect back to REDIRECT_URI, until the lane takes it. */
  callback;
  #tokens;
  #verifier;
  #discovery;

  get redirectUrl() { return REDIRECT_URI; }
  get clientMetadata() {
    return {
      client_name: 'presa interop (OAuth lane)',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return { client_id: CODE_CLIENT_ID }; }
  tokens() { return this.#tokens; }
  saveTokens(tokens) { this.#tokens = tokens; }
  saveCodeVerifier(verifier) { this.#verifier = verifier; }
  codeVerifier() {
    if (this.#verifier === undefined) throw new Error('no code verifier saved');
    return this.#verifier;
  }
  saveDiscoveryState(state) { this.#discovery = state; }
  discoveryState() { return this.#discovery; }

  async redirectToAuthorization(authorizeUrl) {
    this.authorizeUrls.push(new URL(authorizeUrl));
    const response = await observingFetch(String(authorizeUrl), { redirect: 'manual' });
    await response.text().catch(() => {});
    const location = response.headers.get('location');
    if (response.status < 300 || response.status > 399 || !location) {
      throw new Error(`the authorize endpoint answered ${response.status}${location ? '' : ' without a Location'}, not a redirect`);
    }
    const back = new URL(location);
    if (`${back.origin}${back.pathname}` !== REDIRECT_URI) throw new Error(`redirected to ${back.origin}${back.pathname}, not ${REDIRECT_URI}`);
    if (back.searchParams.has('error')) {
      throw new Error(`the authorization server refused: ${back.searchParams.get('error')} ${back.searchParams.get('error_description') ?? ''}`);
    }
    this.callback = back.searchParams;
  }

  /** The pending callback query, once. */
  takeCallback() {
    const callback = this.callback;
    this.callback = undefined;
    check(callback?.get('code'), 'the SDK threw UnauthorizedError but no authorization code came back');
    return callback;
  }
}

/**
 * Runs `attempt` expecting the SDK to send the user to the authorization server: it must
 * throw UnauthorizedError after exactly one new authorize URL. Returns that URL.
 */
async function expectRedirect(provider, attempt, what) {
  const before = provider.authorizeUrls.length;
  let error;
  try {
    await attempt();
  } catch (e) {
    error = e;
  }
  check(error !== undefined, `${what} succeeded without authorization`);
  if (!(error instanceof UnauthorizedError)) throw new Error(`${what}: expected UnauthorizedError, got ${describe(error)}`);
  const added = provider.authorizeUrls.length - before;
  check(added === 1, `${what}: ${added} authorization requests, expected 1`);
  return provider.authorizeUrls[before];
}

/** Checks an authorize URL: the issuer's endpoint, code + PKCE S256, our client, resource, scope. */
function checkAuthorizeUrl(authorizeUrl, scope) {
  const q = authorizeUrl.searchParams;
  const want = {
    endpoint: `${issuer}/authorize`,
    response_type: 'code',
    client_id: CODE_CLIENT_ID,
    code_challenge_method: 'S256',
    redirect_uri: REDIRECT_URI,
    resource: url.href,
  };
  const got = {
    endpoint: `${authorizeUrl.origin}${authorizeUrl.pathname}`,
    response_type: q.get('response_type'),
    client_id: q.get('client_id'),
    code_challenge_method: q.get('code_challenge_method'),
    redirect_uri: q.get('redirect_uri'),
    resource: q.get('resource'),
  };
  check(quote(got) === quote(want), `authorize request ${quote(got)}, expected ${quote(want)}`);
  // S256: base64url of a SHA-256, 43 characters.
  check(/^[A-Za-z0-9_-]{43}$/.test(q.get('code_challenge') ?? ''), `code_challenge ${quote(q.get('code_challenge'))}`);
  check(q.get('scope') === scope, `authorize scope ${quote(q.get('scope'))}, expected ${quote(scope)}`);
}

/**
 * Hands the pending code to `transport.finishAuth` and checks the token request (code,
 * verifier, resource) and the token (scope, audience, subject). Returns a note.
 */
async function finishAuthorization(provider, transport, scope) {
  const mark = exchanges.length;
  await transport.finishAuth(provider.takeCallback());
  const requests = tokenRequests(since(mark));
  check(requests.length === 1, `${requests.length} token requests, expected 1`);
  const req = requests[0];
  check(req.get('grant_type') === 'authorization_code', `grant_type ${quote(req.get('grant_type'))}`);
  check(req.get('code') && req.get('code_verifier'), 'the token request lacks the code or the code_verifier');
  check(req.get('resource') === url.href, `token request resource ${quote(req.get('resource'))}, expected ${quote(url.href)}`);
  const tokens = provider.tokens();
  check(tokens?.access_token, `no access token saved: ${describeTokens(tokens)}`);
  check(sameScopes(tokens.scope, scope), `token response scope ${quote(tokens.scope)}, expected ${quote(scope)}`);
  const claims = claimsOf(tokens.access_token);
  check(claims.aud === url.href, `token aud ${quote(claims.aud)}, expected the fixture's URL ${quote(url.href)}`);
  check(claims.sub === USER, `token sub ${quote(claims.sub)}, expected ${USER}`);
  return `token for ${claims.sub}, aud the fixture URL, scope ${quote(tokens.scope)}`;
}

const callText = async (client, name) => {
  const r = await client.callTool({ name, arguments: {} });
  check(!r.isError, `${name}: isError ${quote(r)}`);
  return firstText(r);
};
const newTransport = (authProvider) => new StreamableHTTPClientTransport(url, { authProvider, fetch: observingFetch });
const newClient = (options) => {
  const client = new Client({ name: 'presa-interop-oauth', version: '1.0.0' }, options);
  client.onerror = (e) => wire(`!! client onerror: ${describe(e)}`);
  return client;
};
const closeQuietly = async (client) => {
  try {
    await withTimeout(client.close(), 5_000, 'client.close()');
  } catch (e) {
    wire(`!! close: ${describe(e)}`);
  }
};

// --- a. without a token --------------------------------------------------------------------
await steps.run('no token: 401 names resource_metadata, the metadata names the issuer and the fixture URL', async () => {
  const response = await observingFetch(url.href, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  await response.text().catch(() => {});
  check(response.status === 401, `status ${response.status}, expected 401`);
  const challenge = response.headers.get('www-authenticate') ?? '';
  check(/^Bearer\b/i.test(challenge), `WWW-Authenticate ${quote(challenge)} is not a Bearer challenge`);
  const metadataUrl = /resource_metadata="([^"]*)"/.exec(challenge)?.[1];
  const wantMetadataUrl = `${url.origin}/.well-known/oauth-protected-resource${url.pathname}`;
  check(metadataUrl === wantMetadataUrl, `resource_metadata ${quote(metadataUrl)}, expected ${quote(wantMetadataUrl)}`);
  check(/scope="mcp:read"/.test(challenge), `the challenge names no scope="${READ}": ${quote(challenge)}`);
  const doc = await observingFetch(metadataUrl).then((r) => {
    check(r.status === 200, `metadata: status ${r.status}`);
    return r.json();
  });
  check(doc.resource === url.href, `metadata resource ${quote(doc.resource)}, expected ${quote(url.href)}`);
  check(Array.isArray(doc.authorization_servers) && doc.authorization_servers.includes(issuer),
    `authorization_servers ${quote(doc.authorization_servers)} lacks ${quote(issuer)}`);
  check(Array.isArray(doc.scopes_supported) && doc.scopes_supported.includes(READ), `scopes_supported ${quote(doc.scopes_supported)}`);
});

// --- b. authorization code + PKCE, 2026-07-28 ---------------------------------------------------
const modernOptions = { versionNegotiation: { mode: { pin: REVISION } } };
const codeProvider = new HeadlessProvider();
let modern = newClient(modernOptions);
let modernTransport = newTransport(codeProvider);

await steps.run(`code flow: connect (pinned ${REVISION}) gets 401, the SDK authorizes (PKCE S256, resource, scope ${READ})`, async () => {
  const mark = exchanges.length;
  const authorizeUrl = await expectRedirect(codeProvider,
    () => modern.connect(modernTransport, { timeout: STEP_TIMEOUT_MS }), 'connect');
  const seen = since(mark);
  const first = seen[0];
  check(first?.method === 'POST' && first.url.href === url.href && first.status === 401,
    `the first request was ${first?.method} ${first?.url} → ${first?.status}, expected POST to the fixture → 401`);
  // Discovery went where the challenge pointed, then to the issuer's metadata.
  const paths = seen.filter((e) => e.method === 'GET').map((e) => `${e.url.origin === url.origin ? 'fixture' : e.url.origin === issuer ? 'issuer' : e.url.origin}${e.url.pathname}`);
  check(paths[0] === `fixture/.well-known/oauth-protected-resource${url.pathname}`, `discovery requests ${quote(paths)}`);
  check(paths.some((p) => p.startsWith('issuer/.well-known/')), `no authorization server metadata request: ${quote(paths)}`);
  checkAuthorizeUrl(authorizeUrl, READ);
});

await steps.run('code flow: finishAuth exchanges the code (code_verifier, resource) for a token', async () => {
  return finishAuthorization(codeProvider, modernTransport, READ);
});

await steps.run(`code flow: connect again with the token (era modern, ${REVISION})`, async () => {
  modernTransport = newTransport(codeProvider);
  const mark = exchanges.length;
  await modern.connect(modernTransport, { timeout: STEP_TIMEOUT_MS });
  check(modern.getProtocolEra() === 'modern', `era ${modern.getProtocolEra()}`);
  check(modern.getNegotiatedProtocolVersion() === REVISION, `negotiated ${modern.getNegotiatedProtocolVersion()}`);
  const refused = since(mark).filter((e) => e.status === 401 || e.status === 403);
  check(refused.length === 0, `${refused.length} requests refused with the token`);
});

await steps.run(`code flow: tools/call test_whoami names ${USER} [${READ}]`, async () => {
  const text = await callText(modern, 'test_whoami');
  check(text === `${USER} [${READ}]`, `text ${quote(text)}`);
});

// --- c. step-up ---------------------------------------------------------------------------------
await steps.run(`step-up: test_scoped_write gets 403 insufficient_scope, the SDK authorizes again with "${READ} ${WRITE}"`, async () => {
  const mark = exchanges.length;
  const authorizeUrl = await expectRedirect(codeProvider,
    () => modern.callTool({ name: 'test_scoped_write', arguments: {} }), 'tools/call test_scoped_write');
  const forbidden = since(mark).find((e) => e.status === 403);
  check(forbidden, 'no 403 before the new authorization');
  check(/error="insufficient_scope"/.test(forbidden.wwwAuthenticate ?? ''), `403 challenge ${quote(forbidden.wwwAuthenticate)}`);
  check(/scope="mcp:read mcp:write"/.test(forbidden.wwwAuthenticate ?? ''), `403 challenge ${quote(forbidden.wwwAuthenticate)} does not name both scopes`);
  check(sameScopes(authorizeUrl.searchParams.get('scope'), `${READ} ${WRITE}`),
    `second authorize scope ${quote(authorizeUrl.searchParams.get('scope'))}, expected ${READ} and ${WRITE}`);
  checkAuthorizeUrl(authorizeUrl, authorizeUrl.searchParams.get('scope'));
  return finishAuthorization(codeProvider, modernTransport, `${READ} ${WRITE}`);
});

await steps.run('step-up: tools/call test_scoped_write succeeds with the new token', async () => {
  const text = await callText(modern, 'test_scoped_write');
  check(text === `written by ${USER}`, `text ${quote(text)}`);
  const who = await callText(modern, 'test_whoami');
  check(who === `${USER} [${READ} ${WRITE}]`, `test_whoami then says ${quote(who)}`);
});
await closeQuietly(modern);

// --- d. client_credentials -----------------------------------------------------------------------
const service = new ClientCredentialsProvider({
  clientId: SERVICE_CLIENT.id,
  clientSecret: SERVICE_CLIENT.secret,
  expectedIssuer: issuer,
});
const serviceClient = newClient(modernOptions);
let serviceConnected = false;

await steps.run(`client_credentials: connect (401 → token request → retry, no redirect; ${REVISION})`, async () => {
  const mark = exchanges.length;
  await serviceClient.connect(newTransport(service), { timeout: STEP_TIMEOUT_MS });
  serviceConnected = true;
  check(serviceClient.getProtocolEra() === 'modern', `era ${serviceClient.getProtocolEra()}`);
  const seen = since(mark);
  check(seen[0]?.status === 401, `the first request got ${seen[0]?.status}, expected 401`);
  const requests = tokenRequests(seen);
  check(requests.length === 1, `${requests.length} token requests, expected 1`);
  check(requests[0].get('grant_type') === 'client_credentials', `grant_type ${quote(requests[0].get('grant_type'))}`);
  check(requests[0].get('resource') === url.href, `token request resource ${quote(requests[0].get('resource'))}`);
  check(requests[0].get('scope') === READ, `token request scope ${quote(requests[0].get('scope'))}, expected ${READ}`);
  const claims = claimsOf(service.tokens()?.access_token ?? '');
  check(claims.aud === url.href && claims.sub === SERVICE_CLIENT.id, `token aud ${quote(claims.aud)}, sub ${quote(claims.sub)}`);
});

await steps.run('client_credentials: test_scoped_write succeeds after the SDK steps up by itself (403 → new token)', async () => {
  check(serviceConnected, 'not run: the connection failed');
  const mark = exchanges.length;
  const text = await callText(serviceClient, 'test_scoped_write');
  check(text === `written by ${SERVICE_CLIENT.id}`, `text ${quote(text)}`);
  const seen = since(mark);
  const forbidden = seen.filter((e) => e.status === 403);
  check(forbidden.length === 1 && /error="insufficient_scope"/.test(forbidden[0].wwwAuthenticate ?? ''),
    `expected one 403 insufficient_scope, saw ${quote(seen.map((e) => e.status))}`);
  const requests = tokenRequests(seen);
  check(requests.length === 1, `${requests.length} token requests, expected 1`);
  check(sameScopes(requests[0].get('scope'), `${READ} ${WRITE}`), `token request scope ${quote(requests[0].get('scope'))}`);
});

await steps.run(`client_credentials: test_whoami names the client (${SERVICE_CLIENT.id})`, async () => {
  check(serviceConnected, 'not run: the connection failed');
  const text = await callText(serviceClient, 'test_whoami');
  check(text === `${SERVICE_CLIENT.id} [${READ} ${WRITE}]`, `text ${quote(text)}`);
});
await closeQuietly(serviceClient);

// --- e. the legacy era -----------------------------------------------------------------------------
// The SDK's default connect(): initialize offering 2025-11-25, in a session. The same
// transport class runs the same authorization code, so the flow is the one above.
const legacyProvider = new HeadlessProvider();
const legacy = newClient({});
let legacyTransport = newTransport(legacyProvider);
let legacyConnected = false;

await steps.run(`legacy (initialize, ${LEGACY_REVISION}): 401 → authorize → token → connect`, async () => {
  const authorizeUrl = await expectRedirect(legacyProvider,
    () => legacy.connect(legacyTransport, { timeout: STEP_TIMEOUT_MS }), 'connect');
  checkAuthorizeUrl(authorizeUrl, READ);
  await finishAuthorization(legacyProvider, legacyTransport, READ);
  legacyTransport = newTransport(legacyProvider);
  await legacy.connect(legacyTransport, { timeout: STEP_TIMEOUT_MS });
  legacyConnected = true;
  check(legacy.getNegotiatedProtocolVersion() === LEGACY_REVISION, `negotiated ${legacy.getNegotiatedProtocolVersion()}`);
  check(legacyTransport.sessionId, 'no session id');
});

await steps.run(`legacy: tools/call test_whoami names ${USER} [${READ}]`, async () => {
  check(legacyConnected, 'not run: the connection failed');
  const text = await callText(legacy, 'test_whoami');
  check(text === `${USER} [${READ}]`, `text ${quote(text)}`);
});
await steps.run('legacy: DELETE ends the session (with the token)', async () => {
  check(legacyConnected, 'not run: the connection failed');
  const mark = exchanges.length;
  await withTimeout(legacyTransport.terminateSession(), 5_000, 'terminateSession()');
  const deletes = since(mark).filter((e) => e.method === 'DELETE');
  check(deletes.length === 1 && deletes[0].status >= 200 && deletes[0].status < 300,
    `DELETE answered ${quote(deletes.map((e) => e.status))}, expected one 2xx`);
});
await closeQuietly(legacy);

process.exitCode = steps.exitCode();
