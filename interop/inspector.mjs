// The Inspector lane: the MCP Inspector's CLI (`mcp-inspector --cli`, from
// @modelcontextprotocol/inspector, pinned by interop/inspector/package-lock.json) in its
// default era, which for an ad-hoc server URL or command is `legacy` (the CLI's
// DEFAULT_PROTOCOL_ERA; its client is the TypeScript SDK with versionNegotiation mode
// 'legacy': initialize offering 2025-11-25). One CLI run per step, as a script or CI job
// uses it (`--format json`, one connection per run); this checks each printed result.
//
// Usage (interop/run does this for each transport, on Node 22):
//   node inspector.mjs --inspector PATH --home DIR --transport http  --url http://127.0.0.1:<port>/mcp
//   node inspector.mjs --inspector PATH --home DIR --transport stdio --command /path/to/presa-fixture
//                      [--wire-log FILE] [--stderr-log FILE]
//
// PATH is the package's launcher (clients/launcher/build/index.js); DIR is the HOME the CLI
// runs with (it keeps its catalog and secrets under ~/.mcp-inspector; the lane gives it a
// scratch folder). Over stdio the CLI spawns stdio-tap.mjs, which spawns the fixture and
// writes the wire log; over HTTP the CLI keeps none (the fixture's logs are the record).
//
// Output: `interop: ok   inspector <transport> <step>`, `FAIL`, or `skip` for what the CLI
// cannot do at all, with the reason (see README.md, "What the Inspector CLI cannot do");
// exit code 0 when no step failed, 1 otherwise, 2 on bad arguments.

import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { STEP_TIMEOUT_MS, Steps, check, firstText, parseArgs, quote } from './common.mjs';

const REVISION = '2025-11-25';
const WATCHED = 'test://watched-resource';
const TAP = fileURLToPath(new URL('./stdio-tap.mjs', import.meta.url));

const opts = parseArgs('inspector.mjs');
if (!opts.inspector || !opts.home) {
  process.stderr.write('inspector.mjs: --inspector and --home are required\n');
  process.exit(2);
}
const transportName = opts.transport;
const steps = new Steps('inspector', transportName);

// The server the CLI connects to: options for HTTP, the target after `--` for stdio.
const target = transportName === 'http'
  ? { options: ['--transport', 'http', '--server-url', opts.url], tail: [] }
  : {
    options: [],
    tail: ['--', process.execPath, TAP, opts['wire-log'] ?? '/dev/null', '--', opts.command, '--transport', 'stdio'],
  };

/**
 * One CLI run: `mcp-inspector --cli --format json <args> <target>`. Resolves to its exit
 * code, its stdout parsed as JSON (undefined when it is not JSON) and its stderr.
 */
function cli(args) {
  const argv = [opts.inspector, '--cli', '--format', 'json', ...target.options, ...args, ...target.tail];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, {
      env: { ...process.env, HOME: opts.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS - 1_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (opts['stderr-log']) appendFileSync(opts['stderr-log'], `== mcp-inspector --cli ${args.join(' ')}: exit ${signal ?? code}\n${stderr}`);
      let json;
      try { json = JSON.parse(stdout); } catch {}
      resolve({ code: signal ? signal : code, json, stdout, stderr });
    });
  });
}

/** A CLI run that must succeed; its `result`. */
async function result(args) {
  const run = await cli(args);
  check(run.code === 0, `mcp-inspector exited ${run.code}: ${run.stderr.trim().split('\n').pop()}`);
  check(run.json?.result, `stdout is not a JSON result: ${quote(run.stdout.slice(0, 300))}`);
  return run.json.result;
}

// --- steps ----------------------------------------------------------------------------
// Each run connects anew (initialize, notifications/initialized, logging/setLevel debug,
// then the method); the first step checks that handshake's outcome.
await steps.run('initialize (default era)', async () => {
  steps.connected = false;
  const r = await result(['--method', 'initialize']);
  steps.connected = true;
  check(r.protocolVersion === REVISION, `negotiated ${r.protocolVersion}, expected ${REVISION}`);
  check(r.serverInfo?.name === 'presa-conformance', `serverInfo ${quote(r.serverInfo)}`);
  for (const c of ['tools', 'resources', 'prompts']) check(r.capabilities?.[c], `capabilities lack ${c}: ${quote(r.capabilities)}`);
});

await steps.run('tools/list', async () => {
  const r = await result(['--method', 'tools/list']);
  const names = (r.tools ?? []).map((t) => t.name);
  for (const n of ['test_simple_text', 'test_tool_with_progress', 'test_elicitation', 'test_trigger_tool_change']) {
    check(names.includes(n), `${n} missing from ${quote(names)}`);
  }
  return `${names.length} tools`;
});

await steps.run('tools/call test_simple_text', async () => {
  const r = await result(['--method', 'tools/call', '--tool-name', 'test_simple_text']);
  check(!r.isError && firstText(r) === 'This is a simple text response for testing.', `result ${quote(r)}`);
});

await steps.run('resources/read test://static-text', async () => {
  const r = await result(['--method', 'resources/read', '--uri', 'test://static-text']);
  check(r.contents?.[0]?.text === 'This is a static text resource for testing.', `contents ${quote(r.contents)}`);
});

await steps.run('prompts/get test_simple_prompt', async () => {
  const r = await result(['--method', 'prompts/get', '--prompt-name', 'test_simple_prompt']);
  const text = r.messages?.[0]?.content?.text;
  check(text === 'This is a simple prompt for testing.', `text ${quote(text)}`);
});

await steps.run('prompts/get test_prompt_with_arguments', async () => {
  const r = await result(['--method', 'prompts/get', '--prompt-name', 'test_prompt_with_arguments',
    '--prompt-args', 'arg1=first', 'arg2=second']);
  const text = r.messages?.[0]?.content?.text;
  check(text === "Prompt with arguments: arg1='first', arg2='second'", `text ${quote(text)}`);
});

steps.skip('answers an elicitation (test_elicitation)',
  'the CLI builds its client with `elicit: false`, so it declares no elicitation capability and registers no elicitation/create handler');
steps.skip('answers a sampling request (test_sampling)',
  'the CLI builds its client with `sample: false`: no sampling capability, no sampling/createMessage handler');

await steps.run('tools/call test_tool_with_progress', async () => {
  const r = await result(['--method', 'tools/call', '--tool-name', 'test_tool_with_progress']);
  check(!r.isError && firstText(r) === 'Progress computation completed: 5050', `result ${quote(r)}`);
});
steps.skip('receives progress',
  'the CLI builds its client with `progress: false`, so its tools/call carries no _meta.progressToken and a server sends no progress');

// The CLI's shared method runner has resources/subscribe (it streams resources/updated
// lines), but `--cli` accepts only its one-shot methods. Ask, and report what it says; a
// CLI that accepted it would make this a FAIL, so the lane gets extended rather than
// silently skipping a step the client can now take.
{
  const name = `resources/subscribe ${WATCHED}, then notifications/resources/updated`;
  let refusal;
  try {
    const run = await cli(['--method', 'resources/subscribe', '--uri', WATCHED]);
    const message = (() => {
      try { return JSON.parse(run.stderr.trim().split('\n').pop()).error?.message; } catch { return undefined; }
    })();
    if (run.code !== 0 && typeof message === 'string' && message.startsWith('Unsupported method: resources/subscribe')) {
      refusal = message.slice(0, message.indexOf('.') + 1);
    } else {
      steps.fail(name, new Error(`expected --cli to refuse resources/subscribe; exit ${run.code}, stdout ${quote(run.stdout.slice(0, 200))}, stderr ${quote(run.stderr.slice(-200))}`));
    }
  } catch (e) {
    steps.fail(name, e);
  }
  if (refusal) {
    steps.skip(name, `--cli refuses the method ("${refusal}"); it runs only one-shot methods, one connection per run`);
  }
}

await steps.run('tools/call test_trigger_tool_change', async () => {
  const r = await result(['--method', 'tools/call', '--tool-name', 'test_trigger_tool_change']);
  check(!r.isError && firstText(r) === 'The tool list changed', `result ${quote(r)}`);
});
steps.skip('receives notifications/tools/list_changed',
  'a --cli run prints only its one method\'s result: the client handles tools/list_changed by refreshing its own tool list and prints nothing of it');

process.exitCode = steps.exitCode();
