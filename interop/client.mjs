// The interop client: the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned by interop/package-lock.json) drives presa-fixture over one transport, opting into
// protocol revision 2026-07-28 explicitly, and prints one line per step.
//
// Usage (interop/run does this for each transport):
//   node client.mjs --transport http  --url http://127.0.0.1:<port>/mcp [--wire-log FILE]
//   node client.mjs --transport stdio --command /path/to/presa-fixture  [--wire-log FILE]
//                                     [--stderr-log FILE]
//
// Output: one line per step, `interop: ok   modern-ts <transport> <step>` or
// `interop: FAIL modern-ts <transport> <step>: <reason>` (common.mjs); the same steps in the
// same order on every run (a step that cannot run because the connection failed is a
// FAIL). Exit code 0 when every step is ok, 1 otherwise, 2 on bad arguments.
//
// Everything goes through the SDK's public client API: no step falls back to a raw
// request. The SDK is used as an application would use it; the only additions are the
// wire logs (a fetch wrapper on HTTP, a tap on the stdio transport's send/onmessage) that
// observe traffic without changing it.

import { closeSync, openSync } from 'node:fs';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import {
  Notifications, ProgressTracker, STEP_TIMEOUT_MS, Steps, check, describe, firstText, loggingFetch, parseArgs,
  quote, stdioShutdownStep, tapStdio, wireLog, withTimeout,
} from './common.mjs';

const REVISION = '2026-07-28';

const opts = parseArgs('client.mjs');
const transportName = opts.transport;
const wire = wireLog(opts['wire-log']);
const steps = new Steps('modern-ts', transportName);

// --- the client ---------------------------------------------------------------------
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
const progress = new ProgressTracker();
client.onerror = (e) => {
  wire(`!! client onerror: ${describe(e)}`);
  progress.onError(e);
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

const notifications = new Notifications();
client.setNotificationHandler('notifications/tools/list_changed', (n) => {
  notifications.record('tools/list_changed', n);
});

let transport;
if (transportName === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(opts.url), { fetch: loggingFetch(wire) });
} else {
  let stderr = 'inherit';
  if (opts['stderr-log']) stderr = openSync(opts['stderr-log'], 'a');
  const env = getDefaultEnvironment();
  if (process.env.RUST_LOG) env.RUST_LOG = process.env.RUST_LOG;
  transport = new StdioClientTransport({ command: opts.command, args: ['--transport', 'stdio'], env, stderr });
  if (opts['wire-log']) tapStdio(transport, wire);
  if (typeof stderr === 'number') process.on('exit', () => { try { closeSync(stderr); } catch {} });
}

await steps.run(`connect (server/discover, pinned ${REVISION})`, async () => {
  steps.connected = false;
  await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
  steps.connected = true;
  check(client.getProtocolEra() === 'modern', `era is ${client.getProtocolEra()}, not modern`);
  check(client.getNegotiatedProtocolVersion() === REVISION, `negotiated ${client.getNegotiatedProtocolVersion()}`);
  const caps = client.getServerCapabilities() ?? {};
  for (const c of ['tools', 'resources', 'prompts', 'completions']) check(caps[c], `server capabilities lack ${c}: ${quote(caps)}`);
});

await steps.run('server/discover', async () => {
  const d = await client.discover({ timeout: STEP_TIMEOUT_MS });
  check(Array.isArray(d.supportedVersions) && d.supportedVersions.includes(REVISION), `supportedVersions ${quote(d.supportedVersions)}`);
  check(d.capabilities?.tools, `capabilities ${quote(d.capabilities)}`);
});

await steps.run('tools/list', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['test_simple_text', 'test_tool_with_progress', 'test_input_required_result_elicitation',
    'test_input_required_result_multi_round', 'test_trigger_tool_change']) {
    check(names.includes(n), `${n} missing from ${quote(names)}`);
  }
});

await steps.run('tools/call test_simple_text', async () => {
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'This is a simple text response for testing.', `text ${quote(firstText(r))}`);
});

// Not in the list, but a place where a real client differs from the runner: the
// SDK derives Mcp-Param-Region from the tool's x-mcp-header itself (base64-wrapping values
// with outer spaces or non-ASCII) and presa checks it against the body. Over stdio there
// are no headers and this is a plain call.
await steps.run('tools/call custom_header_region (x-mcp-header mirrored by the SDK)', async () => {
  for (const region of ['us-west', ' padded ', 'Zürich']) {
    const r = await client.callTool({ name: 'custom_header_region', arguments: { region } });
    check(!r.isError && firstText(r) === `region: ${region}`, `region ${quote(region)}: ${quote(r)}`);
  }
});

await steps.run('tools/call test_tool_with_progress (progress callback)', async () => {
  const [r, note] = await progress.track((onprogress) =>
    client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress }));
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'Progress computation completed: 5050', `text ${quote(firstText(r))}`);
  return note;
});

await steps.run('tools/call test_input_required_result_elicitation (client answers)', async () => {
  const before = elicitations.length;
  const r = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  check(elicitations.length - before === 1, `handler answered ${elicitations.length - before} elicitations, expected 1`);
  check(elicitations[before].props.includes('name'), `asked for ${quote(elicitations[before].props)}`);
  check(firstText(r) === 'Hello, Alice!', `text ${quote(firstText(r))}`);
});

await steps.run('tools/call test_input_required_result_multi_round (two rounds)', async () => {
  const before = elicitations.length;
  const r = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  const asked = elicitations.slice(before).map((e) => e.props.join(','));
  check(quote(asked) === quote(['name', 'color']), `rounds asked for ${quote(asked)}, expected ["name","color"]`);
  check(firstText(r) === 'Hello, Alice! Favourite colour: blue', `text ${quote(firstText(r))}`);
});

await steps.run('resources/list and resources/templates/list', async () => {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  check(uris.includes('test://static-text'), `test://static-text missing from ${quote(uris)}`);
  const { resourceTemplates } = await client.listResourceTemplates();
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  check(templates.includes('test://template/{id}/data'), `template missing from ${quote(templates)}`);
});

await steps.run('resources/read test://static-text', async () => {
  const r = await client.readResource({ uri: 'test://static-text' });
  check(r.contents?.length === 1, `contents ${quote(r.contents)}`);
  check(r.contents[0].text === 'This is a static text resource for testing.', `text ${quote(r.contents[0].text)}`);
});

await steps.run('resources/read test://template/123/data (template)', async () => {
  const r = await client.readResource({ uri: 'test://template/123/data' });
  check(r.contents?.[0]?.uri === 'test://template/123/data', `contents ${quote(r.contents)}`);
  check(r.contents[0].text === 'Template resource data for id 123', `text ${quote(r.contents[0].text)}`);
});

await steps.run('prompts/list', async () => {
  const { prompts } = await client.listPrompts();
  const p = prompts.find((x) => x.name === 'test_prompt_with_arguments');
  check(p, `test_prompt_with_arguments missing from ${quote(prompts.map((x) => x.name))}`);
  const args = (p.arguments ?? []).map((a) => a.name);
  check(quote(args) === quote(['arg1', 'arg2']), `arguments ${quote(args)}`);
});

await steps.run('prompts/get test_prompt_with_arguments', async () => {
  const r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'first', arg2: 'second' } });
  const text = r.messages?.[0]?.content?.text;
  check(text === "Prompt with arguments: arg1='first', arg2='second'", `text ${quote(text)}`);
});

await steps.run('completion/complete (ref/prompt, arg1 "te")', async () => {
  const r = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'te' },
  });
  check(quote(r.completion?.values) === quote(['test', 'testing']), `values ${quote(r.completion?.values)}`);
});

await steps.run('tools/call unknown tool (JSON-RPC error)', async () => {
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

await steps.run('subscriptions/listen sees notifications/tools/list_changed', async () => {
  const before = notifications.count('tools/list_changed');
  const sub = await client.listen({ toolsListChanged: true }, { timeout: STEP_TIMEOUT_MS });
  try {
    check(sub.honoredFilter?.toolsListChanged === true, `honoredFilter ${quote(sub.honoredFilter)}`);
    const r = await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
    check(!r.isError, `test_trigger_tool_change: ${quote(r)}`);
    await notifications.after('tools/list_changed', before);
  } finally {
    await sub.close();
  }
  const how = await withTimeout(sub.closed, 2_000, 'subscription close');
  check(how === 'local', `subscription closed as ${how}, expected local`);
});

// --- shutdown -------------------------------------------------------------------------
if (transportName === 'stdio') {
  // The SDK closes the child's stdin, waits up to 2 s for it to exit, then sends SIGTERM;
  // the fixture must exit 0 on its own, well before that.
  await stdioShutdownStep(steps, client, transport);
} else {
  // Over HTTP the lane closes the fixture's stdin and checks its exit (interop/run).
  try {
    await withTimeout(client.close(), 5_000, 'client.close()');
  } catch (e) {
    steps.fail('client.close()', e);
  }
}
process.exitCode = steps.exitCode();
