// Summarises one conformance run and compares it with the committed baseline.
//
//   node report.mjs --results DIR --baseline FILE [--lane NAME] [--update-baseline]
//                   [--only SCENARIO] [--lane-error TEXT]...
//
// DIR holds the runner's output: server-<scenario>-<timestamp>/checks.json, one JSON array
// of checks per scenario. A scenario passes only when none of its checks is FAILURE,
// WARNING or SKIPPED (the runner's own exit code ignores WARNING and SKIPPED).
//
// The baseline lists every check expected not to be SUCCESS/INFO, with the status it is
// expected to have and a one-line reason. The lane fails on any difference: a new
// non-passing check, a changed status, a baselined check that now passes (stale) or is no
// longer reported, a scenario that produced no results, or a --lane-error from `run`.
// --update-baseline rewrites the baseline from this run, keeping the existing reasons.
// A scenario the runner threw in (it leaves an empty folder) is counted as one FAILURE
// check named `runner-crashed`, so it shows up and can be baselined like any other check.
//
// The last line printed is always
// `conformance <lane>: N of M scenarios pass whole (lane OK|FAILED)`, where <lane> is the
// --lane name (the protocol revision the lane runs) or the baseline's `requirements`.
import fs from "node:fs";
import path from "node:path";

const PASSING = new Set(["SUCCESS", "INFO"]);
const STATUSES = ["SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"];
const TODO = "TODO reason";

// ---- arguments ----
const opts = { laneErrors: [], update: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === "--results") opts.results = process.argv[++i];
  else if (a === "--baseline") opts.baseline = process.argv[++i];
  else if (a === "--only") opts.only = process.argv[++i];
  else if (a === "--lane") opts.lane = process.argv[++i];
  else if (a === "--lane-error") opts.laneErrors.push(process.argv[++i]);
  else if (a === "--update-baseline") opts.update = true;
  else {
    console.error(`report.mjs: unknown argument ${a}`);
    process.exit(2);
  }
}
if (!opts.results || !opts.baseline) {
  console.error("report.mjs: --results and --baseline are required");
  process.exit(2);
}

// Colour only for a terminal, so logs and CI output stay plain.
const tty = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code) => (s) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const red = paint("31"), green = paint("32"), yellow = paint("33"), bold = paint("1");
// Paths print relative to the working directory when they are below it.
const rel = (p) => {
  const r = path.relative(process.cwd(), p);
  return r && !r.startsWith("..") && process.cwd() !== "/" ? r : path.resolve(p);
};
const oneLine = (s, max = 160) => {
  const t = String(s ?? "").split("\n")[0].trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

// ---- collect checks.json files ----
// Folder names are server-<scenario>-<ISO time with ':' and '.' replaced by '-'>.
const DIR_RE = /^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/;
const runs = new Map(); // scenario -> { time, file, checks }
function walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      // The runner creates the folder first; a scenario that threw leaves it empty. That
      // is recorded as a FAILURE check of its own, so it can be baselined like any other.
      const m = DIR_RE.exec(entry.name);
      if (m && !fs.existsSync(path.join(full, "checks.json"))) {
        const [, scenario, time] = m;
        const check = { id: "runner-crashed", status: "FAILURE", errorMessage: crashMessage(scenario) };
        const prev = runs.get(scenario);
        if (!prev || prev.time < time) runs.set(scenario, { time, file: full, checks: [check] });
      }
      walk(full);
    } else if (entry.name === "checks.json") {
      const m = DIR_RE.exec(path.basename(dir));
      if (!m) continue;
      const [, scenario, time] = m;
      let checks;
      try {
        checks = JSON.parse(fs.readFileSync(full, "utf8"));
        if (!Array.isArray(checks)) throw new Error("not a JSON array");
      } catch (e) {
        opts.laneErrors.push(`unreadable ${rel(full)}: ${e.message}`);
        continue;
      }
      // A reused output folder can hold several runs of a scenario; the newest wins.
      const prev = runs.get(scenario);
      if (!prev || prev.time < time) runs.set(scenario, { time, file: full, checks });
    }
  }
}
// The runner logs why a scenario threw; run keeps its output next to the results folder.
function crashMessage(scenario) {
  const log = path.join(opts.results, "..", "runner.log");
  const prefix = `Failed to run scenario ${scenario}: `;
  const line = fs.existsSync(log)
    ? fs.readFileSync(log, "utf8").split("\n").find((l) => l.startsWith(prefix))
    : undefined;
  return `the runner threw inside this scenario and wrote no checks.json` +
    (line ? `: ${line.slice(prefix.length)}` : "");
}
walk(opts.results);
if (opts.only) for (const s of [...runs.keys()]) if (s !== opts.only) runs.delete(s);

// A check is named by its id; a scenario may emit the same id several times (for example
// server-stateless emits sep-2575-http-server-meta-invalid-400 once per probe), so the
// second and later occurrences get #2, #3, … in the order the runner wrote them.
function keyed(checks) {
  const seen = new Map();
  return checks.map((c) => {
    const id = typeof c?.id === "string" ? c.id : "(no id)";
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    return { key: n === 1 ? id : `${id}#${n}`, check: c };
  });
}

// ---- baseline ----
let baseline = { scenarios: [], checks: [] };
const haveBaseline = fs.existsSync(opts.baseline);
if (haveBaseline) {
  try {
    baseline = JSON.parse(fs.readFileSync(opts.baseline, "utf8"));
  } catch (e) {
    console.error(`report.mjs: cannot read ${rel(opts.baseline)}: ${e.message}`);
    process.exit(2);
  }
}
const inScope = (scenario) => !opts.only || scenario === opts.only;
const expectedScenarios = opts.only ? [opts.only] : baseline.scenarios ?? [];
const baselined = new Map(); // "scenario\0check" -> entry
for (const entry of baseline.checks ?? []) {
  if (inScope(entry.scenario)) baselined.set(`${entry.scenario}\0${entry.check}`, entry);
}

// ---- per-scenario table and comparison ----
const unexpected = [], changed = [], stale = [], missing = [], matched = [];
const rows = [];
const totals = Object.fromEntries(STATUSES.map((s) => [s, 0]));
const current = []; // every non-passing check of this run, for --update-baseline
const reported = new Set();

for (const scenario of [...runs.keys()].sort()) {
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]));
  for (const { key, check } of keyed(runs.get(scenario).checks)) {
    const status = STATUSES.includes(check?.status) ? check.status : "FAILURE";
    counts[status]++;
    totals[status]++;
    const k = `${scenario}\0${key}`;
    const entry = baselined.get(k);
    if (entry) reported.add(k);
    const item = { scenario, check: key, status, message: check?.errorMessage };
    if (PASSING.has(status)) {
      if (entry) stale.push({ ...item, expected: entry.status });
    } else {
      current.push(item);
      if (!entry) unexpected.push(item);
      else if (entry.status !== status) changed.push({ ...item, expected: entry.status });
      else matched.push(item);
    }
  }
  const pass = counts.FAILURE + counts.WARNING + counts.SKIPPED === 0;
  rows.push({ scenario, counts, pass });
}
for (const [k, entry] of baselined) {
  if (!reported.has(k) && runs.has(entry.scenario)) missing.push(entry);
}
const missingScenarios = expectedScenarios.filter((s) => !runs.has(s));
const newScenarios = haveBaseline && !opts.only
  ? [...runs.keys()].filter((s) => !expectedScenarios.includes(s))
  : [];

// ---- print the table ----
const width = Math.max(30, ...rows.map((r) => r.scenario.length), ...missingScenarios.map((s) => s.length)) + 2;
const cols = ["SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"];
const head = "scenario".padEnd(width) + cols.map((c) => c.padStart(8)).join("") + "  result";
console.log(`\nconformance results${opts.lane ? ` (lane ${opts.lane})` : ""}: ${rel(opts.results)}\n`);
console.log(bold(head));
for (const r of rows) {
  const nums = cols.map((c) => String(r.counts[c]).padStart(8)).join("");
  console.log(r.scenario.padEnd(width) + nums + "  " + (r.pass ? green("PASS") : red("FAIL")));
}
// When nothing ran at all (the fixture did not start), one line says so instead of a row each.
if (rows.length > 0) {
  for (const s of missingScenarios) {
    console.log(s.padEnd(width) + "(no results)".padStart(40) + "  " + red("FAIL"));
  }
} else console.log(red("(no scenario produced results)"));
const passed = rows.filter((r) => r.pass).length;
const failed = rows.length - passed + missingScenarios.length;
console.log("-".repeat(head.length));
console.log(
  `total (${rows.length + missingScenarios.length} scenarios)`.padEnd(width) +
    cols.map((c) => String(totals[c]).padStart(8)).join("") +
    `  ${passed} PASS, ${failed} FAIL`,
);

// ---- print the differences from the baseline ----
function section(title, items, fmt) {
  if (items.length === 0) return;
  console.log(`\n${bold(title)} (${items.length})`);
  for (const it of items) console.log(`  ${fmt(it)}`);
}
const name = (it) => `${it.scenario} / ${it.check}`;
const msg = (it) => (it.message ? `\n      ${oneLine(it.message)}` : "");
section(red("Unexpected: not in the baseline"), unexpected, (it) => `${it.status.padEnd(8)} ${name(it)}${msg(it)}`);
section(red("Changed status"), changed, (it) => `${it.expected} -> ${it.status}  ${name(it)}${msg(it)}`);
section(
  yellow(`Stale baseline: these now pass, remove them from ${rel(opts.baseline)} (or run conformance/run --update-baseline)`),
  stale,
  (it) => `${it.expected} -> ${it.status}  ${name(it)}`,
);
section(red("Missing: baselined but not reported by this run"), missing, (it) => `${it.status.padEnd(8)} ${it.scenario} / ${it.check}`);
section(red("Scenarios with no results"), rows.length > 0 ? missingScenarios : [], (s) => s);
section(
  red("Scenarios not in the baseline's scenario list (run conformance/run --update-baseline)"),
  newScenarios,
  (s) => s,
);
section(red("Lane problems"), opts.laneErrors, (e) => e);
if (!haveBaseline && !opts.update) {
  console.log(`\n${yellow(`No baseline at ${rel(opts.baseline)}: run conformance/run --update-baseline to create one.`)}`);
}

// ---- update the baseline ----
let laneFailed;
if (opts.update) {
  // A run with lane problems (crashed runner, broken fixture) says nothing reliable.
  if (opts.laneErrors.length > 0) {
    console.log(`\n${red("Not updating the baseline: this run had lane problems.")}`);
    laneFailed = true;
  } else {
    const reasons = new Map((baseline.checks ?? []).map((e) => [`${e.scenario}\0${e.check}`, e.reason]));
    // With --only, entries of other scenarios are kept as they are.
    const kept = (baseline.checks ?? []).filter((e) => !inScope(e.scenario));
    const fresh = current.map((it) => ({
      scenario: it.scenario,
      check: it.check,
      status: it.status,
      reason: reasons.get(`${it.scenario}\0${it.check}`) ?? TODO,
    }));
    const checks = [...kept, ...fresh].sort(
      (a, b) => a.scenario.localeCompare(b.scenario) || a.check.localeCompare(b.check),
    );
    const scenarios = opts.only
      ? [...new Set([...(baseline.scenarios ?? []), opts.only])].sort()
      : [...runs.keys()].sort();
    const out = {
      comment:
        "Checks of the official conformance runner that are expected not to be SUCCESS/INFO, with why. " +
        "Maintained by conformance/run --update-baseline; replace every 'TODO reason'.",
      requirements: opts.lane ?? baseline.requirements ?? "2026-07-28",
      scenarios,
      checks,
    };
    fs.writeFileSync(opts.baseline, JSON.stringify(out, null, 2) + "\n");
    const todo = checks.filter((e) => e.reason === TODO).length;
    console.log(`\nWrote ${rel(opts.baseline)}: ${checks.length} baselined checks, ${scenarios.length} scenarios` +
      (todo ? `, ${todo} with "${TODO}" to fill in` : ""));
    laneFailed = false;
  }
} else {
  laneFailed =
    unexpected.length + changed.length + stale.length + missing.length +
      missingScenarios.length + newScenarios.length + opts.laneErrors.length > 0;
  if (matched.length > 0) console.log(`\n${matched.length} non-passing checks match the baseline.`);
}

const laneName = opts.lane ?? baseline.requirements ?? "2026-07-28";
console.log(`\nlane ${laneName}: ${laneFailed ? red("FAILED") : green("OK")}`);
// Worded so that CI, which reads a trailing 'N passed, N failed' line as the test
// count, does not mistake baselined scenarios for failed tests: the lane's verdict is above.
console.log(`conformance ${laneName}: ${passed} of ${passed + failed} scenarios pass whole (lane ${laneFailed ? "FAILED" : "OK"})`);
process.exit(laneFailed ? 1 : 0);
