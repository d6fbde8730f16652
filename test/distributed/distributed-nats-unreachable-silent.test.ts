/**
 * Audit M-2: a gateway or actor host whose NATS_URL does not answer (a typo, NATS not up yet, a firewall) waits for
 * it forever (waitOnFirstConnect, maxReconnectAttempts -1) and writes nothing at all: no log line, no listening
 * port, no exit. An unreachable DATABASE_URL, by contrast, is "start-up failed: … ECONNREFUSED" and exit 1 at once.
 * The operator needs at least a line saying what the process waits for (servers without credentials).
 * Run: `bun test/run.ts test/distributed/distributed-nats-unreachable-silent.test.ts`.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { freePort } from "../../infra/nats/local-cluster.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { pumpLines } from "../helpers/role-process.ts";

const ROOT = join(import.meta.dir, "../..");
let db: TestDatabase | undefined;
const procs: { kill(sig?: number | NodeJS.Signals): void; exited: Promise<number> }[] = [];
afterAll(async () => {
  for (const p of procs) p.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  await db?.drop().catch(() => {});
});

for (const role of ["gateway", "actors"] as const) {
  test(`${role}: an unreachable NATS_URL is said in the log within 15 s (not silence)`, async () => {
    db ??= await createTestDatabase();
    const port = await freePort(); // nothing listens there
    const proc = Bun.spawn(["bun", join(ROOT, "gateway/main.ts"), role], {
      cwd: ROOT,
      env: { ...process.env, NATS_URL: `nats://127.0.0.1:${port}`, DATABASE_URL: db.url, SECRET_KEY: "ab".repeat(32), PORT: "0", METRICS_PORT: "0", HOST: "127.0.0.1", NODE_ENV: "test", LOG_LEVEL: "info" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    procs.push(proc);
    const lines: string[] = [];
    void pumpLines(proc.stdout, (l) => lines.push(l));
    void pumpLines(proc.stderr, (l) => lines.push(l));
    // either a warn line naming NATS while it waits, or a start-up failure naming it (stops looking at the first)
    const naming = () => lines.filter((l) => /nats/i.test(l) && !/migrations applied/.test(l));
    let exited = false;
    void proc.exited.then(() => (exited = true));
    for (const until = Date.now() + 15_000; Date.now() < until && !exited && naming().length === 0; ) await Bun.sleep(100);
    expect(naming().length).toBeGreaterThan(0);
  }, 40_000);
}
