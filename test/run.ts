/**
 * The test command (`bun run test`): runs bun's test runner over the whole suite (or the paths given) and
 * ends with the line CI reads: `N passed, N failed, N skipped`. Exit code is non-zero when anything failed.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";

const args = process.argv.slice(2);
// bunfig's [test] timeout covers tests but not beforeAll/afterAll hooks, which boot real servers; the flag covers both.
const timeout = args.some((a) => a.startsWith("--timeout")) ? [] : ["--timeout", "60000"];
// Two worker processes, each running files one after another with one module registry as a single process does
// (docs/decisions.md "Test runner: files run in two worker processes"): most of a file's time is spent waiting on
// servers, Postgres and NATS, so the suite takes ~60 % of its serial time on the 2-core CI machine. TEST_WORKERS=1
// runs it serially; paths given run serially too unless --parallel is passed.
const workers = Number(process.env.TEST_WORKERS ?? 2);
const parallel = args.some((a) => a.startsWith("--parallel")) || args.some((a) => !a.startsWith("-")) || !(workers > 1) ? [] : [`--parallel=${workers}`, "--no-isolate"];
// test/timings.json holds each file's duration (ms) from a run of the suite. Given it, bun cuts the workers' shares by
// time instead of by file count, each worker starts with its slowest file and an idle worker takes the slowest file not
// yet started, so a long file (a crash or chaos test of a minute) never starts last and stretches the run alone; a file
// missing from it counts as slowest. Refresh it with `bun test/run.ts --update-timings` (the whole suite, two workers).
const TIMINGS = join(import.meta.dir, "timings.json");
const timings = (parallel.length > 0 || args.some((a) => a.startsWith("--parallel") || a === "--update-timings")) && !args.some((a) => a.startsWith("--timings")) && existsSync(TIMINGS) ? ["--timings", TIMINGS] : [];
const proc = Bun.spawn(["bun", "test", ...timeout, ...parallel, ...timings, ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env } });

let pass = 0;
let fail = 0;
let skip = 0;
let todo = 0;
let sawSummary = false;

// CI shows only the tail of the output, and a hook's failure is listed there as "(unnamed)": keep, for each failure,
// the file it ran in and the lines printed just before it, and print them again above the summary.
const CONTEXT_LINES = 40;
const MAX_REPORTED = 5;
let currentFile = "";
let inSummary = false; // bun's closing list repeats the (fail) lines
const recent: string[] = [];
const failures: { file: string; line: string; context: string[] }[] = [];

function note(line: string) {
  if (/^\s*\d+ tests? (failed|skipped|todo):$/.test(line)) inSummary = true;
  if (/^\S.*\.test\.tsx?:$/.test(line)) {
    currentFile = line.slice(0, -1);
    recent.length = 0; // a failure's context is what its own file printed
  }
  if (!inSummary && /^\(fail\) /.test(line) && failures.length < MAX_REPORTED) failures.push({ file: currentFile, line, context: [...recent] });
  recent.push(line);
  if (recent.length > CONTEXT_LINES) recent.shift();
}

async function pump(stream: ReadableStream<Uint8Array>, out: NodeJS.WriteStream) {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    const text = decoder.decode(chunk, { stream: true });
    out.write(text);
    buf += text;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (out === process.stderr) note(line);
      const m = /^\s*(\d+) (pass|fail|skip|todo)\s*$/.exec(line);
      if (m) {
        sawSummary = true;
        const n = Number(m[1]);
        if (m[2] === "pass") pass = n;
        else if (m[2] === "fail") fail = n;
        else if (m[2] === "skip") skip = n;
        else todo = n;
      }
    }
  }
}

await Promise.all([pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr)]);
const code = await proc.exited;
if (!sawSummary || (code !== 0 && fail === 0)) fail = Math.max(fail, 1);
for (const f of failures) {
  console.log(`\n== failed in ${f.file || "(no file header seen)"}: ${f.line}\n${f.context.join("\n")}`);
}
console.log(`${pass} passed, ${fail} failed, ${skip + todo} skipped`);
process.exit(code !== 0 || fail > 0 ? 1 : 0);

export {};
