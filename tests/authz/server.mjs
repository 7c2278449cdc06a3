// A real OAuth 2.1 authorization server for presa's tests: oauth2-mock-server on a loopback
// port, with hooks that make its tokens what an MCP resource server is given, and a control
// API under /test/ for the cases a test needs on purpose (bad tokens, key rotation,
// revocation, opaque tokens, a JWKS endpoint that is down).
//
// Started by `presa_tests::authz::AuthServer` (tests/src/authz.rs) and by interop/run (the
// oauth-ts lane) with Node 22; prints one JSON ready line on stdout and nothing else there;
// exits when its stdin closes (so a test that dies leaves nothing running), and on SIGTERM
// or SIGINT.
//
// What holds for tokens issued through /authorize + /token (authorization code with PKCE,
// refresh) and client_credentials:
// - header `typ` is `at+jwt` (RFC 9068); each token has its own `jti`;
// - `aud` is the RFC 8707 `resource` of the token request, else of the authorize request
//   (several `resource` parameters give an array); without one, no `aud`;
// - `scope` is the scope requested (token request, else authorize request; a refresh keeps
//   the grant's), and absent when none was: never the mock's "dummy", in the token and in
//   the token response alike;
// - `client_id` is the client's (HTTP Basic name, else the `client_id` parameter); `sub` is
//   the user "johndoe" for the code flow, the client id for client_credentials;
// - the authorize request must carry an S256 `code_challenge`, and the token request the
//   matching `code_verifier`; codes and refresh tokens are single-use (invalid_grant).
// Clients are not registered: any client id is accepted at /authorize and /token.

import { createServer } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { Events, OAuth2Issuer, OAuth2Service } from 'oauth2-mock-server';

/** The resource server's credentials for introspection (HTTP Basic). */
const INTROSPECTION_CLIENT = { id: 'presa-resource-server', secret: 'presa-resource-server-secret' };
/** One signing key of each of these at start, in the JWKS. */
const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'];
/** The algorithm of minted tokens and of rotated keys unless the request names one. */
const DEFAULT_ALG = 'RS256';
/** Defaults of minted and opaque tokens (the mock's user, and a client). */
const DEFAULT_SUBJECT = 'johndoe';
const DEFAULT_CLIENT_ID = 'presa-test-client';
const TOKEN_TTL_SECONDS = 3600;

const OIDC_DISCOVERY = '/.well-known/openid-configuration';
const RFC8414_DISCOVERY = '/.well-known/oauth-authorization-server';
const JWKS_PATH = '/jwks';
const INTROSPECT_PATH = '/introspect';
/** What answers 503 while the control API has the AS "down" (the introspection endpoint
 * too, by POST). */
const DOWN_PATHS = new Set([OIDC_DISCOVERY, RFC8414_DISCOVERY, JWKS_PATH]);
/** Requests to each of these paths are counted, answered or not (`/test/counts`). */
const COUNTED = { [JWKS_PATH]: 'jwks', [INTROSPECT_PATH]: 'introspection', [OIDC_DISCOVERY]: 'metadata', [RFC8414_DISCOVERY]: 'metadata' };
const counts = { jwks: 0, introspection: 0, metadata: 0 };

const issuer = new OAuth2Issuer();
const service = new OAuth2Service(issuer);

/** The kid of the first key of each algorithm; `keyCounts` numbers each algorithm's kids. */
const kids = {};
const keyCounts = {};
async function generateKey(alg) {
  keyCounts[alg] = (keyCounts[alg] ?? 0) + 1;
  const key = await issuer.keys.generate(alg, { kid: `${alg.toLowerCase()}-${keyCounts[alg]}` });
  return key.kid;
}
for (const alg of SIGNING_ALGS) kids[alg] = await generateKey(alg);

/** Every token this AS issued (JWT or opaque) → its claims, and whether it was revoked. */
const issued = new Map();
/** Authorization codes and refresh tokens not yet used → what they grant. */
const grants = new Map();
/** Per token request: what its access token was issued for (set by the first signing). */
const tokenRequests = new WeakMap();
let down = false;

const now = () => Math.floor(Date.now() / 1000);
const jwtClaims = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
/** Zero parameters → undefined, one → the string, several → the array. */
const oneOrMany = (values) => (values.length === 0 ? undefined : values.length === 1 ? values[0] : values);
const listOf = (value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function sendJson(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

// --- Metadata: RFC 8414 and OIDC discovery, one document ----------------------------------
// The mock serves the OIDC document; the RFC 8414 path is answered by the same handler
// (see `front`), so both carry exactly this.
service.on(Events.BeforeWellKnownOpenIdConfiguration, (doc) => {
  Object.assign(doc.body, {
    code_challenge_methods_supported: ['S256'],
    grant_types_supported: ['authorization_code', 'client_credentials', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
    id_token_signing_alg_values_supported: SIGNING_ALGS,
  });
});

// --- The code flow: PKCE S256 required; remember what each code grants ---------------------
service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const query = new URL(req.url, issuer.url).searchParams;
  const code = redirect.url.searchParams.get('code');
  if (code === null) return; // an error redirect already
  if (!query.get('code_challenge') || query.get('code_challenge_method') !== 'S256') {
    redirect.url.searchParams.delete('code');
    redirect.url.searchParams.set('error', 'invalid_request');
    redirect.url.searchParams.set('error_description', 'PKCE with code_challenge_method=S256 is required');
    return;
  }
  grants.set(code, {
    scope: query.get('scope') ?? undefined,
    resource: oneOrMany(query.getAll('resource')),
    clientId: query.get('client_id') ?? undefined,
  });
});

/** The client of a token request: its HTTP Basic name, else its `client_id` parameter. */
function clientOf(req) {
  const auth = req.headers.authorization ?? '';
  if (auth.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return decodeURIComponent(colon === -1 ? decoded : decoded.slice(0, colon));
  }
  return typeof req.body.client_id === 'string' ? req.body.client_id : undefined;
}

// The hook fires for the access token first, then (code and refresh grants) for the ID
// token, which keeps the mock's claims.
service.on(Events.BeforeTokenSigning, (token, req) => {
  if (tokenRequests.has(req)) return;
  const body = req.body;
  let granted;
  if (body.grant_type === 'authorization_code' || body.grant_type === 'refresh_token') {
    const key = body.grant_type === 'authorization_code' ? body.code : body.refresh_token;
    granted = grants.get(key);
    grants.delete(key);
  }
  const clientId = clientOf(req) ?? granted?.clientId;
  const request = {
    known: granted !== undefined,
    scope: body.scope ?? granted?.scope,
    resource: oneOrMany(listOf(body.resource)) ?? granted?.resource,
    clientId,
  };
  tokenRequests.set(req, request);

  const claims = token.payload;
  delete claims.scope;
  if (request.scope !== undefined) claims.scope = request.scope;
  if (request.resource !== undefined) claims.aud = request.resource;
  if (clientId !== undefined) claims.client_id = clientId;
  if (body.grant_type === 'client_credentials' && clientId !== undefined) claims.sub = clientId;
  claims.jti = randomUUID();
  token.header.typ = 'at+jwt';
});

service.on(Events.BeforeResponse, (response, req) => {
  const request = tokenRequests.get(req);
  if (request === undefined || response.statusCode !== 200) return;
  const body = response.body;
  const grantType = req.body.grant_type;
  if (grantType === 'authorization_code' || grantType === 'refresh_token') {
    // An unknown or used code or refresh token, or a code redeemed without its verifier
    // (the mock checks a verifier only when one is sent).
    if (!request.known || (grantType === 'authorization_code' && !req.body.code_verifier)) {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant' };
      return;
    }
  }
  delete body.scope;
  if (request.scope !== undefined) body.scope = request.scope;
  if (body.refresh_token) grants.set(body.refresh_token, request);
  issued.set(body.access_token, { claims: jwtClaims(body.access_token), revoked: false });
});

// --- Introspection (RFC 7662), for the resource server only ---------------------------------
function isIntrospectionClient(authorization) {
  if (!authorization?.toLowerCase().startsWith('basic ')) return false;
  const decoded = Buffer.from(authorization.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return false;
  try {
    return (
      decodeURIComponent(decoded.slice(0, colon)) === INTROSPECTION_CLIENT.id &&
      decodeURIComponent(decoded.slice(colon + 1)) === INTROSPECTION_CLIENT.secret
    );
  } catch {
    return false; // malformed percent-encoding
  }
}

function isActive({ claims, revoked }) {
  const t = now();
  const notExpired = claims.exp === undefined || (typeof claims.exp === 'number' && claims.exp > t);
  const started = claims.nbf === undefined || (typeof claims.nbf === 'number' && claims.nbf <= t);
  return !revoked && notExpired && started;
}

async function introspect(req, res) {
  if (!isIntrospectionClient(req.headers.authorization)) {
    sendJson(res, 401, { error: 'invalid_client' }, { 'www-authenticate': 'Basic realm="introspection"' });
    return;
  }
  let text = '';
  for await (const chunk of req) text += chunk;
  const token = new URLSearchParams(text).get('token');
  if (!token) {
    sendJson(res, 400, { error: 'invalid_request', error_description: 'token is required' });
    return;
  }
  const entry = issued.get(token);
  const answer = entry !== undefined && isActive(entry) ? { token_type: 'Bearer', ...entry.claims, active: true } : { active: false };
  sendJson(res, 200, answer);
}

// --- The control API ------------------------------------------------------------------------
/** Default claims with `overrides` applied; an override of `null` removes the claim. */
function claimsWith(overrides) {
  const t = now();
  const claims = {
    iss: issuer.url,
    sub: DEFAULT_SUBJECT,
    client_id: DEFAULT_CLIENT_ID,
    iat: t,
    exp: t + TOKEN_TTL_SECONDS,
    jti: randomUUID(),
  };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === null) delete claims[name];
    else claims[name] = value;
  }
  return claims;
}

/** Signs `claims` verbatim with `kid` of `signer`'s keys; `typ` null leaves it out. */
function sign(signer, kid, claims, typ) {
  return signer.buildToken({
    kid,
    scopesOrTransform: (header, payload) => {
      for (const name of Object.keys(payload)) delete payload[name];
      Object.assign(payload, claims);
      header.typ = typ ?? undefined;
    },
  });
}

class BadRequest extends Error {}

async function mint(body) {
  const { alg, kid, typ = 'at+jwt', unknown_kid: unknownKid = false, ...overrides } = body;
  const claims = claimsWith(overrides);
  let signer = issuer;
  let signingKid;
  if (unknownKid) {
    // A key of the same issuer that its JWKS never serves.
    signer = new OAuth2Issuer();
    signer.url = issuer.url;
    signingKid = (await signer.keys.generate(alg ?? DEFAULT_ALG, { kid: `unknown-${randomUUID()}` })).kid;
  } else if (kid !== undefined) {
    const key = issuer.keys.toJSON().find((k) => k.kid === kid);
    if (key === undefined) throw new BadRequest(`no key with kid ${kid} in the JWKS`);
    if (alg !== undefined && alg !== key.alg) throw new BadRequest(`key ${kid} is ${key.alg}, not ${alg}`);
    signingKid = kid;
  } else {
    signingKid = kids[alg ?? DEFAULT_ALG];
    if (signingKid === undefined) throw new BadRequest(`alg must be one of ${SIGNING_ALGS.join(', ')}`);
  }
  const token = await sign(signer, signingKid, claims, typ);
  issued.set(token, { claims, revoked: false });
  return { token, kid: signingKid };
}

/** A JSON route of the control API: `handle(body)` → 200 with its result, or 204. */
function control(path, handle) {
  service.addRoute('POST', `/test/${path}`, async (req, res) => {
    const body = req.body ?? {};
    if (typeof body !== 'object' || Array.isArray(body)) {
      sendJson(res, 400, { error: 'the body must be a JSON object' });
      return;
    }
    try {
      const result = await handle(body);
      if (result === undefined) {
        res.writeHead(204);
        res.end();
      } else {
        sendJson(res, 200, result);
      }
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      sendJson(res, 400, { error: err.message });
    }
  });
}

control('mint', mint);
control('rotate', async ({ alg = DEFAULT_ALG }) => {
  if (!SIGNING_ALGS.includes(alg)) throw new BadRequest(`alg must be one of ${SIGNING_ALGS.join(', ')}`);
  return { kid: await generateKey(alg) };
});
control('revoke', ({ token }) => {
  const entry = issued.get(token);
  if (entry === undefined) throw new BadRequest('not a token this server issued');
  entry.revoked = true;
});
control('opaque', (overrides) => {
  const token = randomBytes(32).toString('base64url');
  issued.set(token, { claims: claimsWith(overrides), revoked: false });
  return { token };
});
control('down', () => {
  down = true;
});
control('up', () => {
  down = false;
});
control('counts', () => ({ ...counts }));

// --- The server -----------------------------------------------------------------------------
function front(req, res) {
  const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
  if (Object.hasOwn(COUNTED, path)) counts[COUNTED[path]] += 1;
  const introspection = req.method === 'POST' && path === INTROSPECT_PATH;
  if (down && ((req.method === 'GET' && DOWN_PATHS.has(path)) || introspection)) {
    sendJson(res, 503, { error: 'temporarily_unavailable' }, { 'retry-after': '1' });
    return;
  }
  if (req.method === 'GET' && path === RFC8414_DISCOVERY) req.url = OIDC_DISCOVERY;
  if (introspection) {
    introspect(req, res).catch((err) => {
      console.error('introspection failed:', err);
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
    });
    return;
  }
  service.requestHandler(req, res);
}

const server = createServer(front);
await new Promise((resolve, reject) => server.listen(0, '127.0.0.1').once('listening', resolve).once('error', reject));
// Set explicitly: the mock would name the issuer http://localhost:PORT.
issuer.url = `http://127.0.0.1:${server.address().port}`;

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
process.stdin.resume();

console.log(
  JSON.stringify({
    issuer: issuer.url,
    authorization_endpoint: `${issuer.url}/authorize`,
    token_endpoint: `${issuer.url}/token`,
    jwks_uri: `${issuer.url}${JWKS_PATH}`,
    introspection_endpoint: `${issuer.url}${INTROSPECT_PATH}`,
    introspection_client: INTROSPECTION_CLIENT,
    kids,
  }),
);
