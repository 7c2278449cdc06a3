// What the interop lane's Node clients share: their command line, the wire log (a fetch
// wrapper for HTTP, a tap on the SDK's stdio transport), the step lines they print, and
// waiting for a notification with a deadline.
//
// A step line is `interop: <status> <lane> <transport> <step>[: <reason>| [<note>]]`, with
// status `ok  `, `FAIL` or `skip`; interop/run counts them. A skip is a step the lane's
// client cannot take at all (the reason says why); it never counts as ok.

import { appendFileSync, writeFileSync } from 'node:fs';
import { ProtocolError, SdkError } from '@modelcontextprotocol/client';

/** Per step; a whole client run takes about a second. */
export const STEP_TIMEOUT_MS = 10_000;
/** How long a lane waits for a notification the server announced. */
export const NOTIFICATION_WAIT_MS = 5_000;

/**
 * `--key value` pairs into an object; `--transport http` needs `--url`, `--transport stdio`
 * needs `--command`. Exits 2 on anything else.
 */
export function parseArgs(program) {
  const opts = {};
  const argv = process.argv.slice(2);
  const usage = (msg) => {
    process.stderr.write(`${program}: ${msg}\n`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    if (!key.startsWith('--') || i + 1 >= argv.length) usage(`bad argument ${key}`);
    opts[key.slice(2)] = argv[++i];
  }
  if (opts.transport !== 'http' && opts.transport !== 'stdio') usage('--transport takes http or stdio');
  if (opts.transport === 'http' && !opts.url) usage('--transport http needs --url');
  if (opts.transport === 'stdio' && !opts.command) usage('--transport stdio needs --command');
  return opts;
}

/** A wire log appending timestamped lines to `path` (a no-op without a path). */
export function wireLog(path) {
  if (path) writeFileSync(path, '');
  return (line) => {
    if (path) appendFileSync(path, `${new Date().toISOString()} ${line}\n`);
  };
}

/**
 * A `fetch` that logs every request and response to `wire` (SSE bodies are teed, so the
 * SDK reads them as usual).
 */
export function loggingFetch(wire) {
  return async (input, init = {}) => {
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
  };
}

/**
 * Logs every message a stdio transport sends and receives. The instance keeps its class,
 * so the SDK still treats it as its own StdioClientTransport.
 */
export function tapStdio(transport, wire) {
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

/** An error as one line: JSON-RPC and SDK errors with their code and data. */
export function describe(e) {
  if (e instanceof ProtocolError) return `JSON-RPC error ${e.code}: ${e.message}${e.data === undefined ? '' : ` data=${JSON.stringify(e.data)}`}`;
  if (e instanceof SdkError) return `SDK error ${e.code}: ${e.message}${e.data === undefined ? '' : ` data=${JSON.stringify(e.data)}`}${e.cause ? ` (cause: ${e.cause?.message ?? e.cause})` : ''}`;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function quote(v) {
  return JSON.stringify(v);
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** The text of a result's first text content item. */
export function firstText(result) {
  const block = (result.content ?? []).find((c) => c.type === 'text');
  return block?.text;
}

/**
 * Prints the step lines of one lane on one transport and counts them. A step whose
 * function throws is a FAIL; once `connected` is false (the connection step failed) every
 * later step is a FAIL without running.
 */
export class Steps {
  constructor(lane, transport) {
    this.lane = lane;
    this.transport = transport;
    this.passed = 0;
    this.failed = 0;
    this.connected = true;
  }

  #line(status, name, tail) {
    console.log(`interop: ${status} ${this.lane.padEnd(9)} ${this.transport.padEnd(5)} ${name}${tail}`);
  }

  /** Runs `fn` as one step; its return value, if any, is a note on the ok line. */
  async run(name, fn) {
    if (!this.connected) return this.fail(name, new Error('not run: the connection failed'));
    try {
      const note = await withTimeout(Promise.resolve().then(fn), STEP_TIMEOUT_MS, 'step');
      this.passed++;
      this.#line('ok  ', name, note ? ` [${note}]` : '');
    } catch (e) {
      this.fail(name, e);
    }
  }

  fail(name, error) {
    this.failed++;
    this.#line('FAIL', name, `: ${describe(error)}`);
  }

  /** A step this client cannot take; `reason` says why. */
  skip(name, reason) {
    this.#line('skip', name, `: ${reason}`);
  }

  /** 0 when every step was ok, 1 otherwise. */
  exitCode() {
    return this.failed === 0 ? 0 : 1;
  }
}

/**
 * Notifications a handler recorded, by kind, with a way to wait for the next one: a step
 * notes `count(kind)`, does what makes the server notify, then awaits `after(kind, count)`.
 */
export class Notifications {
  #seen = new Map();
  #waiters = [];

  record(kind, value) {
    const list = this.#seen.get(kind) ?? [];
    list.push(value);
    this.#seen.set(kind, list);
    this.#waiters = this.#waiters.filter((w) => {
      if (w.kind !== kind || list.length <= w.count) return true;
      w.resolve(list[w.count]);
      return false;
    });
  }

  count(kind) {
    return this.#seen.get(kind)?.length ?? 0;
  }

  all(kind) {
    return [...(this.#seen.get(kind) ?? [])];
  }

  /** The first `kind` notification after the first `count`, within `ms`. */
  after(kind, count, ms = NOTIFICATION_WAIT_MS) {
    const list = this.#seen.get(kind) ?? [];
    if (list.length > count) return Promise.resolve(list[count]);
    const waiter = { kind, count };
    const arrived = new Promise((resolve) => { waiter.resolve = resolve; });
    this.#waiters.push(waiter);
    return withTimeout(arrived, ms, `waiting for ${kind}`).finally(() => {
      this.#waiters = this.#waiters.filter((w) => w !== waiter);
    });
  }
}

/**
 * The progress notifications of one call, counting those the TypeScript SDK dropped as
 * "for an unknown token": its Protocol dispatches notifications on a microtask but
 * responses synchronously, so when the last progress line and the response arrive in one
 * stdio read the response settles the request first (typescript-sdk issue #2580, open;
 * fix proposed in PR #2586). The server sent them in order; the lane counts them as
 * received and says so. Install `onError` as (part of) `client.onerror`.
 */
export class ProgressTracker {
  static #LATE = 'Received a progress notification for an unknown token: ';
  late = [];

  onError(e) {
    const msg = e instanceof Error ? e.message : String(e);
    if (msg.startsWith(ProgressTracker.#LATE)) {
      try { this.late.push(JSON.parse(msg.slice(ProgressTracker.#LATE.length)).params); } catch {}
    }
  }

  /**
   * Calls `call(onprogress)` and checks at least 3 increasing progress notifications
   * reached the client; returns [result, note].
   */
  async track(call) {
    const progress = [];
    const lateBefore = this.late.length;
    const result = await call((p) => progress.push(p));
    await new Promise((res) => setImmediate(res)); // let any late notification reach onerror
    const late = this.late.slice(lateBefore);
    const all = [...progress, ...late];
    check(progress.length >= 1, `no progress notification reached the callback (late: ${quote(late)})`);
    check(all.length >= 3, `${all.length} progress notifications: ${quote(all)}`);
    const values = all.map((p) => p.progress);
    check(values.every((v, i) => i === 0 || v > values[i - 1]), `progress not increasing: ${quote(values)}`);
    const note = late.length > 0
      ? `${progress.length} via the callback, ${late.length} dropped by the SDK as arriving after the response (typescript-sdk#2580)`
      : `${progress.length} via the callback`;
    return [result, note];
  }
}

/**
 * Over stdio: closes the client and checks the fixture it spawned exits 0 on its own,
 * before the SDK's SIGTERM at 2 s. `_process` is the transport's private child handle,
 * read only to observe the exit.
 */
export async function stdioShutdownStep(steps, client, transport) {
  const child = transport._process;
  const exited = child
    ? new Promise((res) => {
      if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
      else child.once('exit', (code, signal) => res({ code, signal }));
    })
    : undefined;
  await steps.run('fixture exits 0 when its stdin closes', async () => {
    check(exited, 'no child process');
    const started = Date.now();
    await withTimeout(client.close(), 6_000, 'client.close()');
    const { code, signal } = await withTimeout(exited, 1_000, 'fixture exit');
    const took = Date.now() - started;
    check(signal === null && code === 0, `fixture exited with ${signal ?? `code ${code}`}`);
    check(took < 1_900, `fixture took ${took} ms to exit (the SDK sends SIGTERM after 2 s)`);
  });
}
