// The legacy TypeScript lane: the same pinned SDK as client.mjs (@modelcontextprotocol/client,
// interop/package-lock.json) with its DEFAULT connect(): no versionNegotiation option, which
// the SDK documents as mode 'legacy', "the plain 2025 connect sequence": initialize
// offering 2025-11-25, then notifications/initialized, and over HTTP a session
// (Mcp-Session-Id) with its GET stream. It drives presa-fixture over one transport and
// prints one line per step.
//
// Usage (interop/run does this for each transport):
//   node legacy-client.mjs --transport http  --url http://127.0.0.1:<port>/mcp [--wire-log FILE]
//   node legacy-client.mjs --transport stdio --command /path/to/presa-fixture  [--wire-log FILE]
//                                            [--stderr-log FILE]
//
// Output: `interop: ok   legacy-ts <transport> <step>` or `interop: FAIL legacy-ts ...`
// (common.mjs); exit code 0 when every step is ok, 1 otherwise, 2 on bad arguments.
//
// Every step goes through the SDK's public client API, as an application uses it; the only
// additions are the wire logs that observe traffic without changing it.

import { closeSync, openSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import {
  Notifications, ProgressTracker, STEP_TIMEOUT_MS, Steps, check, describe, firstText, loggingFetch, parseArgs,
  quote, stdioShutdownStep, tapStdio, wireLog, withTimeout,
} from './common.mjs';

const REVISION = '2025-11-25'; // the SDK's LATEST_PROTOCOL_VERSION, which initialize offers
const WATCHED = 'test://watched-resource';
const USER = { username: 'alice', email: 'alice@example.com' };

const opts = parseArgs('legacy-client.mjs');
const transportName = opts.transport;
const wire = wireLog(opts['wire-log']);
const steps = new Steps('legacy-ts', transportName);

// --- the client -----------------------------------------------------------------------
const client = new Client(
  { name: 'presa-interop-legacy', version: '1.0.0' },
  // No versionNegotiation: the default, legacy connect().
  { capabilities: { elicitation: { form: {} }, sampling: {} } },
);
const progress = new ProgressTracker();
client.onerror = (e) => {
  wire(`!! client onerror: ${describe(e)}`);
  progress.onError(e);
};

// The server's requests to the client: answered at once, as a user or a model would.
const elicitations = [];
client.setRequestHandler('elicitation/create', async (request) => {
  const params = request.params ?? {};
  elicitations.push(params);
  return { action: 'accept', content: { ...USER } };
});
const samplings = [];
client.setRequestHandler('sampling/createMessage', async (request) => {
  samplings.push(request.params);
  return { role: 'assistant', content: { type: 'text', text: 'a sampled answer' }, model: 'interop-model', stopReason: 'endTurn' };
});

const notifications = new Notifications();
client.setNotificationHandler('notifications/tools/list_changed', (n) => {
  notifications.record('tools/list_changed', n);
});
client.setNotificationHandler('notifications/resources/updated', (n) => {
  notifications.record('resources/updated', n.params);
});

// A transport to the fixture (over stdio a new fixture process per transport).
let stderrFd;
function newTransport() {
  if (transportName === 'http') {
    return new StreamableHTTPClientTransport(new URL(opts.url), { fetch: loggingFetch(wire) });
  }
  if (opts['stderr-log'] && stderrFd === undefined) {
    stderrFd = openSync(opts['stderr-log'], 'a');
    process.on('exit', () => { try { closeSync(stderrFd); } catch {} });
  }
  const env = getDefaultEnvironment();
  if (process.env.RUST_LOG) env.RUST_LOG = process.env.RUST_LOG;
  const stdio = new StdioClientTransport({
    command: opts.command, args: ['--transport', 'stdio'], env, stderr: stderrFd ?? 'inherit',
  });
  if (opts['wire-log']) tapStdio(stdio, wire);
  return stdio;
}
const transport = newTransport();

// --- steps ----------------------------------------------------------------------------
await steps.run('initialize (default connect)', async () => {
  steps.connected = false;
  await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
  steps.connected = true;
  check(client.getProtocolEra() === 'legacy', `era is ${client.getProtocolEra()}, not legacy`);
  check(client.getNegotiatedProtocolVersion() === REVISION, `negotiated ${client.getNegotiatedProtocolVersion()}, expected ${REVISION}`);
  const caps = client.getServerCapabilities() ?? {};
  for (const c of ['tools', 'resources', 'prompts']) check(caps[c], `server capabilities lack ${c}: ${quote(caps)}`);
  check(caps.resources.subscribe === true, `resources.subscribe is not true: ${quote(caps)}`);
  check(client.getServerVersion()?.name === 'presa-conformance', `serverInfo ${quote(client.getServerVersion())}`);
  if (transportName === 'http') {
    check(transport.sessionId, 'no Mcp-Session-Id after initialize');
    return `session ${transport.sessionId}`;
  }
  return undefined;
});

await steps.run('tools/list', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['test_simple_text', 'test_tool_with_progress', 'test_elicitation', 'test_sampling',
    'test_trigger_tool_change', 'test_trigger_resource_update']) {
    check(names.includes(n), `${n} missing from ${quote(names)}`);
  }
  return `${names.length} tools`;
});

await steps.run('tools/call test_simple_text', async () => {
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'This is a simple text response for testing.', `text ${quote(firstText(r))}`);
});

await steps.run('resources/read test://static-text', async () => {
  const r = await client.readResource({ uri: 'test://static-text' });
  check(r.contents?.length === 1, `contents ${quote(r.contents)}`);
  check(r.contents[0].text === 'This is a static text resource for testing.', `text ${quote(r.contents[0].text)}`);
});

await steps.run('prompts/get test_simple_prompt', async () => {
  const r = await client.getPrompt({ name: 'test_simple_prompt' });
  const text = r.messages?.[0]?.content?.text;
  check(text === 'This is a simple prompt for testing.', `text ${quote(text)}`);
});

await steps.run('prompts/get test_prompt_with_arguments', async () => {
  const r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'first', arg2: 'second' } });
  const text = r.messages?.[0]?.content?.text;
  check(text === "Prompt with arguments: arg1='first', arg2='second'", `text ${quote(text)}`);
});

await steps.run('tools/call test_elicitation (elicitation/create answered)', async () => {
  const before = elicitations.length;
  const message = 'Please share your details';
  const r = await client.callTool({ name: 'test_elicitation', arguments: { message } });
  check(elicitations.length - before === 1, `handler answered ${elicitations.length - before} elicitations, expected 1`);
  const asked = elicitations[before];
  check(asked.message === message, `message ${quote(asked.message)}`);
  const props = Object.keys(asked.requestedSchema?.properties ?? {}).sort();
  check(quote(props) === quote(['email', 'username']), `asked for ${quote(props)}`);
  const want = `User provided: username=${USER.username}, email=${USER.email}`;
  check(!r.isError && firstText(r) === want, `result ${quote(r)}`);
});

await steps.run('tools/call test_sampling (sampling/createMessage answered)', async () => {
  const before = samplings.length;
  const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'What is 2+2?' } });
  check(samplings.length - before === 1, `handler answered ${samplings.length - before} sampling requests, expected 1`);
  const asked = samplings[before];
  check(asked.messages?.[0]?.content?.text === 'What is 2+2?', `messages ${quote(asked.messages)}`);
  check(!r.isError && firstText(r) === 'LLM response: a sampled answer', `result ${quote(r)}`);
});

await steps.run('tools/call test_tool_with_progress (progress callback)', async () => {
  const [r, note] = await progress.track((onprogress) =>
    client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress }));
  check(!r.isError, `isError: ${quote(r)}`);
  check(firstText(r) === 'Progress computation completed: 5050', `text ${quote(firstText(r))}`);
  return note;
});

await steps.run(`resources/subscribe ${WATCHED}, then notifications/resources/updated`, async () => {
  await client.subscribeResource({ uri: WATCHED });
  const before = notifications.count('resources/updated');
  const r = await client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
  check(!r.isError, `test_trigger_resource_update: ${quote(r)}`);
  const updated = await notifications.after('resources/updated', before);
  check(updated?.uri === WATCHED, `updated ${quote(updated)}`);
  await client.unsubscribeResource({ uri: WATCHED });
});

await steps.run('tools/call test_trigger_tool_change, then notifications/tools/list_changed', async () => {
  const before = notifications.count('tools/list_changed');
  const r = await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  check(!r.isError, `test_trigger_tool_change: ${quote(r)}`);
  await notifications.after('tools/list_changed', before);
});

// --- shutdown -------------------------------------------------------------------------
if (transportName === 'stdio') {
  await stdioShutdownStep(steps, client, transport);
} else {
  // A legacy HTTP client ends its session with DELETE (the SDK's terminateSession); the
  // lane then closes the fixture's stdin and checks its exit (interop/run).
  await steps.run('DELETE ends the session', async () => {
    await withTimeout(transport.terminateSession(), 5_000, 'terminateSession()');
    check(transport.sessionId === undefined, `session id still ${transport.sessionId}`);
  });
  try {
    await withTimeout(client.close(), 5_000, 'client.close()');
  } catch (e) {
    steps.fail('client.close()', e);
  }
}
// The other legacy revision the fixture serves: a second connection whose initialize
// offers only 2025-06-18 (the SDK's supportedProtocolVersions: initialize offers the first
// 2025-era entry), asked for an elicitation (2025-06-18's has no `mode`).
await steps.run('initialize offering 2025-06-18, then an elicitation', async () => {
  const older = new Client(
    { name: 'presa-interop-legacy-2025-06-18', version: '1.0.0' },
    { capabilities: { elicitation: {} }, supportedProtocolVersions: ['2025-06-18'] },
  );
  older.onerror = (e) => wire(`!! 2025-06-18 client onerror: ${describe(e)}`);
  let asked;
  older.setRequestHandler('elicitation/create', async (request) => {
    asked = request.params;
    return { action: 'accept', content: { ...USER } };
  });
  wire('== a second connection, offering 2025-06-18');
  await older.connect(newTransport(), { timeout: STEP_TIMEOUT_MS });
  try {
    check(older.getNegotiatedProtocolVersion() === '2025-06-18', `negotiated ${older.getNegotiatedProtocolVersion()}`);
    const r = await older.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
    check(asked?.message === 'Who are you?', `elicitation ${quote(asked)}`);
    const want = `User provided: username=${USER.username}, email=${USER.email}`;
    check(!r.isError && firstText(r) === want, `result ${quote(r)}`);
  } finally {
    await withTimeout(older.close(), 5_000, 'close()');
  }
});

process.exitCode = steps.exitCode();
