/**
 * The process guard gateway/main.ts installs (infra/process-guard.ts): a database-unavailable error that escaped
 * every handler (a stray reconnect error, a loop's promise nobody awaited) is logged and survived, where Bun would
 * end the whole service; any other unhandled error still ends the process with exit code 1. Run in child processes,
 * because that is what the guard changes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

let dir: string;
let script: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-test-guard-"));
  script = join(dir, "guarded.ts");
  const root = resolve(import.meta.dir, "../..");
  await writeFile(
    script,
    `import { createProcessGuard } from ${JSON.stringify(join(root, "infra/process-guard.ts"))};
import { log } from ${JSON.stringify(join(root, "infra/log.ts"))};
createProcessGuard({ log }).install();
const code = process.argv[2];
const how = process.argv[3];
const err = Object.assign(new Error("connect " + code + " 127.0.0.1:1"), { code });
if (how === "reject") void Promise.reject(err);
else setTimeout(() => { throw err; }, 0);
setTimeout(() => { console.log("still serving"); process.exit(0); }, 300);
`,
  );
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(code: string, how: "reject" | "throw") {
  const proc = Bun.spawn(["bun", script, code, how], { stdout: "pipe", stderr: "pipe", env: { ...process.env, LOG_LEVEL: "warn" } });
  const [stdout, stderr, exit] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, exit };
}

for (const how of ["reject", "throw"] as const) {
  test(`a database-unavailable error nobody handled (${how === "reject" ? "a rejection" : "an exception"}) is logged and the process keeps serving`, async () => {
    const r = await run("ECONNREFUSED", how);
    expect(r.exit).toBe(0);
    expect(r.stdout).toContain("still serving");
    const line = r.stderr.split("\n").find((l) => l.includes("database error escaped its caller"));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: "warn", kind: how === "reject" ? "unhandledRejection" : "uncaughtException", code: "ECONNREFUSED" });
  }, 20_000);

  test(`any other error nobody handled (${how === "reject" ? "a rejection" : "an exception"}) still ends the process with exit code 1`, async () => {
    const r = await run("EBUG", how);
    expect(r.exit).toBe(1);
    expect(r.stdout).not.toContain("still serving");
    expect(r.stderr).toContain("the process exits");
  }, 20_000);
}
