// The interop client: the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned by interop/package-lock.json) drives presa-fixture over one transport, opting into
// protocol revision 2026-07-28 explicitly, and prints one line per step.
//
// Usage (interop/run does this for each transport):
//   node client.mjs --transport http  --url http://127.0.0.1:<port>/mcp [--wire-log FILE]
//   node client.mjs --transport stdio --command /path/to/presa-fixture  [--wire-log FILE]
//                                     [--stderr-log FILE]
//
// Output: one line per step, `interop: ok   <transport> <step>` or
// `interop: FAIL <transport> <step>: <reason>`; the same steps in the same order on every
// run (a step that cannot run because the connection failed is a FAIL). Exit code 0 when
// every step is ok, 1 otherwise, 2 on bad arguments.
//
// Everything goes through the SDK's public client API: no step falls back to a raw
// request. The SDK is used as an application would use it; the only additions are the
// wire logs (a fetch wrapper on HTTP, a tap on the stdio transport's send/onmessage) that
// observe traffic without changing it.

import { appendFileSync, closeSync, openSync, writeFileSync } from 'node:fs';
import { Client, ProtocolError, SdkError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

const REVISION = '2026-07-28';
const STEP_TIMEOUT_MS = 10_000; // per step; the whole client run takes well under a second
const LIST_CHANGED_WAIT_MS = 5_000;

// --- arguments ------------------------------------------------------------------------
const opts = {};
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    if (!key.startsWith('--') || i + 1 >= argv.length) usage(`bad argument ${key}`);
    opts[key.slice(2)] = argv[++i];
  }
  if (opts.transport === 'http' && !opts.url) usage('--transport http needs --url');
  if (opts.transport === 'stdio' && !opts.command) usage('--transport stdio needs --command');
  if (opts.transport !== 'http' && opts.transport !== 'stdio') usage('--transport takes http or stdio');
}
function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\n`);
  process.exit(2);
}
const transportName = opts.transport;

// --- wire log -------------------------------------------------------------------------
const wireLog = opts['wire-log'];
if (wireLog) writeFileSync(wireLog, '');
function wire(line) {
  if (wireLog) appendFileSync(wireLog, `${new Date().toISOString()} ${line}\n`);
}

// HTTP: log every request and response (SSE bodies are teed, so the SDK reads them as usual).
async function loggingFetch(input, init = {}) {
  const url = typeof input === 'string' ? input : input.url ?? String(input);
  const headers = new Headers(init.headers ?? {});
  const headerText = [...headers].map(([k, v]) => `${k}: ${v}`).join(' | ');
  wire(`>> ${init.method ?? 'GET'} ${url} [${headerText}] ${init.body ?? ''}`);
  let response;
  try {
    response = await fetch(input, init);
  } catch (e) {
    wire(`<< fetch failed: ${e?.message ?? e}`);
    throw e;
  }
  const respHeaders = [...response.headers].map(([k, v]) => `${k}: ${v}`).join(' | ');
  wire(`<< ${response.status} [${respHeaders}]`);
  if (!response.body) return response;
  const [forSdk, forLog] = response.body.tee();
  (async () => {
    const decoder = new TextDecoder();
    const reader = forLog.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        if (text) wire(`<< body chunk: ${JSON.stringify(text)}`);
      }
      wire(`<< body end (${init.method ?? 'GET'} ${url})`);
    } catch (e) {
      wire(`<< body aborted: ${e?.message ?? e}`);
    }
  })();
  return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
}

// stdio: tap the session transport's messages (the instance keeps its class, so the SDK
// still treats it as its own StdioClientTransport).
function tapStdio(transport) {
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    wire(`>> ${JSON.stringify(message)}`);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler && ((message, extra) => {
      wire(`<< ${JSON.stringify(message)}`);
      return handler(message, extra);
    }),
    set: (h) => { handler = h; },
  });
}

// --- steps ----------------------------------------------------------------------------
let passed = 0;
let failed = 0;
function report(name, error, note) {
  if (error === undefined) {
    passed++;
    console.log(`interop: ok   ${transportName.padEnd(5)} ${name}${note ? ` [${note}]` : ''}`);
  } else {
    failed++;
    console.log(`interop: FAIL ${transportName.padEnd(5)} ${name}: ${describe(error)}`);
  }
}
function describe(e) {
  if (e instanceof ProtocolError) return `JSON-RPC error ${e.code}: ${e.message}${e.data === undefined ? '' : ` data=${JSON.stringify(e.data)}`}`;
  if (e instanceof SdkError) return `SDK error ${e.code}: ${e.message}${e.data === undefined ? '' : ` data=${JSON.stringify(e.data)}`}${e.cause ? ` (cause: ${e.cause?.message ?? e.cause})` : ''}`;
  if (e instanceof Error) return e.message;
  return String(e);
}
function check(cond, msg) {
  if (!cond) throw new Error(msg);
}
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}
async function step(name, fn) {
  if (!connected && name !== CONNECT) return report(name, new Error('not run: the connection failed'));
  try {
    const note = await withTimeout(Promise.resolve().then(fn), STEP_TIMEOUT_MS, 'step');
    report(name, undefined, note);
  } catch (e) {
    report(name, e);
  }
}
function firstText(result) {
  const block = (result.content ?? []).find((c) => c.type === 'text');
  return block?.text;
}
function quote(v) {
  return JSON.stringify(v);
}

// --- the client -----------------------------------------------------------------------
const elicitations = []; // every elicitation/create the client's handler answered
const client = new Client(
  { name: 'presa-interop', version: '1.0.0' },
  {
    capabilities: { elicitation: { form: {} } },
    // Opt into 2026-07-28 explicitly: connect() sends server/discover and requires the
    // server to offer exactly this revision (no fallback to initialize).
    versionNegotiation: { mode: { pin: REVISION } },
  },
);
// Progress notifications the SDK dropped as "unknown token" because it had already
// settled the request: its Protocol dispatches notifications on a microtask but responses
// synchronously, so when the last progress line and the response arrive in one stdio read
// the response wins (typescript-sdk issue #2580, open; fix proposed in PR #2586). The
// server sent them in order; the progress step counts them as received, and says so.
const LATE_PROGRESS = 'Received a progress notification for an unknown token: ';
const lateProgress = [];
client.onerror = (e) => {
  wire(`!! client onerror: ${describe(e)}`);
  const msg = e instanceof Error ? e.message : String(e);
  if (msg.startsWith(LATE_PROGRESS)) {
    try { lateProgress.push(JSON.parse(msg.slice(LATE_PROGRESS.length)).params); } catch {}
  }
};

// The elicitation handler: input_required results are fulfilled through it automatically
// (the SDK's multi-round-trip driver), then the call is retried with inputResponses.
client.setRequestHandler('elicitation/create', async (request) => {
  const params = request.params ?? {};
  const props = Object.keys(params.requestedSchema?.properties ?? {});
  elicitations.push({ message: params.message, props });
  const content = {};
  if (props.includes('name')) content.name = 'Alice';
  if (props.includes('color')) content.color = 'blue';
  return { action: 'accept', content };
});

const toolListChanged = [];
client.setNotificationHandler('notifications/tools/list_changed', (n) => {
  toolListChanged.push(n);
});

let transport;
if (transportName === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(opts.url), { fetch: loggingFetch });
} else {
  let stderr = 'inherit';
  if (opts['stderr-log']) stderr = openSync(opts['stderr-log'], 'a');
  const env = getDefaultEnvironment();
  if (process.env.RUST_LOG) env.RUST_LOG = process.env.RUST_LOG;
  transport = new StdioClientTransport({ command: opts.command, args: ['--transport', 'stdio'], env, stderr });
  if (wireLog) tapStdio(transport);
  if (typeof stderr === 'number') process.on('exit', () => { try { closeSync(stderr); } catch {} });
}

const CONNECT = `connect (server/discover, pinned ${REVISION})`;
let connected = false;

await step(CONNECT, async () => {
  await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
  connected = true;
  check(client.getProtocolEra() === 'modern', `era is ${client.getProtocolEra()}, not modern`);
  check(client.getNegotiatedProtocolVersion() === REVISION, `negotiated ${client.getNegotiatedProtocolVersion()}`);
  const caps = client.getServerCapabilities() ?? {};
  for (const c of ['tools', 'resources', 'prompts', 'completions']) check(caps[c], `server capabilities lack ${c}: ${quote(caps)}`);
});

await step('server/discover', async () => {
  const d = await client.discover({ timeout: STEP_TIMEOUT_MS });
  check(Array.isArray(d.supportedVersions) && d.supportedVersions.includes(REVISION), `supportedVersions ${quote(d.supportedVersions)}`);
  check(d.capabilities?.tools, `capabilities ${quote(d.capabilities)}`);
});

await step('tools/list', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['test_simple_text', 'test_tool_with_progress', 'test_input_required_result_elicitation',
    'test_input_required_result_multi_round', 'test_trigger_tool_change']) {
    check(names.includes(n), `${n} missing from ${quote(names)}`);
  }
});

await step('tools/call test_simple_text', async () => {
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'This is a simple text response for testing.', `text ${quote(firstText(r))}`);
});

// Not in the issue's list, but a place where a real client differs from the runner: the
// SDK derives Mcp-Param-Region from the tool's x-mcp-header itself (base64-wrapping values
// with outer spaces or non-ASCII) and presa checks it against the body. Over stdio there
// are no headers and this is a plain call.
await step('tools/call custom_header_region (x-mcp-header mirrored by the SDK)', async () => {
  for (const region of ['us-west', ' padded ', 'Zürich']) {
    const r = await client.callTool({ name: 'custom_header_region', arguments: { region } });
    check(!r.isError && firstText(r) === `region: ${region}`, `region ${quote(region)}: ${quote(r)}`);
  }
});

await step('tools/call test_tool_with_progress (progress callback)', async () => {
  const progress = [];
  const lateBefore = lateProgress.length;
  const r = await client.callTool(
    { name: 'test_tool_with_progress', arguments: {} },
    { onprogress: (p) => progress.push(p) },
  );
  await new Promise((res) => setImmediate(res)); // let any late notification reach onerror
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'Progress computation completed: 5050', `text ${quote(firstText(r))}`);
  const late = lateProgress.slice(lateBefore);
  const all = [...progress, ...late];
  check(progress.length >= 1, `no progress notification reached the callback (late: ${quote(late)})`);
  check(all.length >= 3, `${all.length} progress notifications: ${quote(all)}`);
  const values = all.map((p) => p.progress);
  check(values.every((v, i) => i === 0 || v > values[i - 1]), `progress not increasing: ${quote(values)}`);
  if (late.length > 0) {
    return `${progress.length} via the callback, ${late.length} dropped by the SDK as arriving after the response (typescript-sdk#2580)`;
  }
  return `${progress.length} via the callback`;
});

await step('tools/call test_input_required_result_elicitation (client answers)', async () => {
  const before = elicitations.length;
  const r = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  check(elicitations.length - before === 1, `handler answered ${elicitations.length - before} elicitations, expected 1`);
  check(elicitations[before].props.includes('name'), `asked for ${quote(elicitations[before].props)}`);
  check(firstText(r) === 'Hello, Alice!', `text ${quote(firstText(r))}`);
});

await step('tools/call test_input_required_result_multi_round (two rounds)', async () => {
  const before = elicitations.length;
  const r = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  const asked = elicitations.slice(before).map((e) => e.props.join(','));
  check(quote(asked) === quote(['name', 'color']), `rounds asked for ${quote(asked)}, expected ["name","color"]`);
  check(firstText(r) === 'Hello, Alice! Favourite colour: blue', `text ${quote(firstText(r))}`);
});

await step('resources/list and resources/templates/list', async () => {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  check(uris.includes('test://static-text'), `test://static-text missing from ${quote(uris)}`);
  const { resourceTemplates } = await client.listResourceTemplates();
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  check(templates.includes('test://template/{id}/data'), `template missing from ${quote(templates)}`);
});

await step('resources/read test://static-text', async () => {
  const r = await client.readResource({ uri: 'test://static-text' });
  check(r.contents?.length === 1, `contents ${quote(r.contents)}`);
  check(r.contents[0].text === 'This is a static text resource for testing.', `text ${quote(r.contents[0].text)}`);
});

await step('resources/read test://template/123/data (template)', async () => {
  const r = await client.readResource({ uri: 'test://template/123/data' });
  check(r.contents?.[0]?.uri === 'test://template/123/data', `contents ${quote(r.contents)}`);
  check(r.contents[0].text === 'Template resource data for id 123', `text ${quote(r.contents[0].text)}`);
});

await step('prompts/list', async () => {
  const { prompts } = await client.listPrompts();
  const p = prompts.find((x) => x.name === 'test_prompt_with_arguments');
  check(p, `test_prompt_with_arguments missing from ${quote(prompts.map((x) => x.name))}`);
  const args = (p.arguments ?? []).map((a) => a.name);
  check(quote(args) === quote(['arg1', 'arg2']), `arguments ${quote(args)}`);
});

await step('prompts/get test_prompt_with_arguments', async () => {
  const r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'first', arg2: 'second' } });
  const text = r.messages?.[0]?.content?.text;
  check(text === "Prompt with arguments: arg1='first', arg2='second'", `text ${quote(text)}`);
});

await step('completion/complete (ref/prompt, arg1 "te")', async () => {
  const r = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'te' },
  });
  check(quote(r.completion?.values) === quote(['test', 'testing']), `values ${quote(r.completion?.values)}`);
});

await step('tools/call unknown tool (JSON-RPC error)', async () => {
  let error;
  try {
    const r = await client.callTool({ name: 'no_such_tool', arguments: {} });
    throw new Error(`expected a JSON-RPC error, got a result: ${quote(r)}`);
  } catch (e) {
    error = e;
  }
  if (!(error instanceof ProtocolError)) throw new Error(`not a JSON-RPC error: ${describe(error)}`);
  check(error.code === -32602, `code ${error.code}, expected -32602 (${error.message})`);
  // The connection is still usable afterwards.
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  check(firstText(r) === 'This is a simple text response for testing.', 'a call after the error failed');
});

await step('subscriptions/listen sees notifications/tools/list_changed', async () => {
  const before = toolListChanged.length;
  const sub = await client.listen({ toolsListChanged: true }, { timeout: STEP_TIMEOUT_MS });
  try {
    check(sub.honoredFilter?.toolsListChanged === true, `honoredFilter ${quote(sub.honoredFilter)}`);
    const r = await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
    check(!r.isError, `test_trigger_tool_change: ${quote(r)}`);
    const deadline = Date.now() + LIST_CHANGED_WAIT_MS;
    while (toolListChanged.length === before && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    check(toolListChanged.length > before, `no notifications/tools/list_changed within ${LIST_CHANGED_WAIT_MS} ms`);
  } finally {
    await sub.close();
  }
  const how = await withTimeout(sub.closed, 2_000, 'subscription close');
  check(how === 'local', `subscription closed as ${how}, expected local`);
});

// --- shutdown -------------------------------------------------------------------------
if (transportName === 'stdio') {
  // The SDK closes the child's stdin, waits up to 2 s for it to exit, then sends SIGTERM.
  // The fixture must exit 0 on its own, well before that. `_process` is the transport's
  // private child handle, read here only to observe the exit.
  const child = transport._process;
  const exited = child
    ? new Promise((res) => {
      if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
      else child.once('exit', (code, signal) => res({ code, signal }));
    })
    : undefined;
  await step('fixture exits 0 when its stdin closes', async () => {
    check(exited, 'no child process');
    const started = Date.now();
    await withTimeout(client.close(), 6_000, 'client.close()');
    const { code, signal } = await withTimeout(exited, 1_000, 'fixture exit');
    const took = Date.now() - started;
    check(signal === null && code === 0, `fixture exited with ${signal ?? `code ${code}`}`);
    check(took < 1_900, `fixture took ${took} ms to exit (the SDK sends SIGTERM after 2 s)`);
  });
} else {
  // Over HTTP the lane closes the fixture's stdin and checks its exit (interop/run).
  try {
    await withTimeout(client.close(), 5_000, 'client.close()');
  } catch (e) {
    report('client.close()', e);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
