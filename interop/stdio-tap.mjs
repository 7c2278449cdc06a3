// A pass-through between a stdio MCP client and the server it spawns, logging every line
// both ways: for clients that keep no wire log of their own (the Inspector CLI). The client
// spawns this instead of the server; this spawns the server with the same stdio, copies
// bytes unchanged, and exits with the server's exit code (or re-raises its signal).
//
// Usage: node stdio-tap.mjs LOG -- COMMAND [ARGS...]
//
// LOG gets lines in the format of common.mjs's wire log: `>> ` for client to server,
// `<< ` for server to client, `== ` for the spawn and the exit. Several runs may append to
// one LOG.

import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const [log, dashes, command, ...args] = process.argv.slice(2);
if (!log || dashes !== '--' || !command) {
  process.stderr.write('usage: node stdio-tap.mjs LOG -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const wire = (line) => appendFileSync(log, `${new Date().toISOString()} ${line}\n`);

// Logs whole lines of one direction; a line split across chunks is joined first.
function lines(prefix) {
  let pending = '';
  return {
    push(chunk) {
      pending += chunk.toString('utf8');
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        wire(`${prefix}${pending.slice(0, nl)}`);
        pending = pending.slice(nl + 1);
      }
    },
    flush() {
      if (pending) wire(`${prefix}${pending} (no newline)`);
      pending = '';
    },
  };
}

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
wire(`== spawned pid ${child.pid}: ${[command, ...args].join(' ')}`);

const toServer = lines('>> ');
process.stdin.on('data', (chunk) => {
  toServer.push(chunk);
  child.stdin.write(chunk);
});
process.stdin.on('end', () => {
  toServer.flush();
  wire('== client closed stdin');
  child.stdin.end();
});
child.stdin.on('error', () => {}); // the server may exit before reading everything

const toClient = lines('<< ');
child.stdout.on('data', (chunk) => {
  toClient.push(chunk);
  process.stdout.write(chunk);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    wire(`== ${signal} forwarded to the server`);
    child.kill(signal);
  });
}

// 'close' comes after the server's stdout ended, so everything it wrote was copied.
child.on('close', (code, signal) => {
  toClient.flush();
  wire(`== server exited with ${signal ?? `code ${code}`}`);
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.stdin.destroy(); // stop reading, so the process exits
    process.exitCode = code ?? 1;
  }
});
