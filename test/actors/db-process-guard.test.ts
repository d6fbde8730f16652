/**
 * The process guard gateway/main.ts installs (infra/process-guard.ts): an error of one of our database connections
 * that escaped every handler (a query promise nobody handled while postgres.js reconnects) is logged with its stack
 * and survived, where Bun would end the whole service; any other unhandled error still ends the process with exit
 * code 1. "Ours" is decided by the error's origin, not its code (review R2-F1): fetch() to a webhook or processor
 * raises the same ECONNREFUSED/ECONNRESET, and a statement-level code (57014, 40P01) can only escape from a query of
 * ours nobody awaited, a bug. Run in child processes, because that is what the guard changes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { serverUrl } from "../helpers/db.ts";

let dir: string;
let script: string;
let refusedPort: number;

/** A port nothing listens on (bound once, then closed). */
async function closedPort(): Promise<number> {
  return new Promise((res) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

beforeAll(async () => {
  refusedPort = await closedPort();
  dir = await mkdtemp(join(tmpdir(), "acs-test-guard-"));
  script = join(dir, "guarded.ts");
  const root = resolve(import.meta.dir, "../..");
  await writeFile(
    script,
    // postgres.js as infra/db.ts resolves it: from this temporary directory a bare "postgres" can be another copy,
    // whose PostgresError the guard would not recognise
    `import postgres from ${JSON.stringify(Bun.resolveSync("postgres", root))};
import { connect as tcpConnect } from "node:net";
import { createProcessGuard } from ${JSON.stringify(join(root, "infra/process-guard.ts"))};
import { connect } from ${JSON.stringify(join(root, "infra/db.ts"))};
import { log } from ${JSON.stringify(join(root, "infra/log.ts"))};
createProcessGuard({ log }).install();
const [scenario, how, port, pgUrl] = process.argv.slice(2);
/** Raises err as nobody-handled: a rejection, or an exception thrown from a timer. */
const escape = (err: unknown) => (how === "reject" ? void Promise.reject(err) : setTimeout(() => { throw err; }, 0));
const caught = (p: PromiseLike<unknown>) => Promise.resolve(p).then(() => { throw new Error("expected a failure"); }, (e) => e);
/** A raw socket's own error (no query attached), as a socket of ours or of anything else raises it. */
const socketError = (host: string) => new Promise<unknown>((res) => tcpConnect(Number(port), host).on("error", res));
/** A pool whose database is configured by host name, which has tried to connect (so the name has been resolved). */
const namedPool = async () => {
  const sql = connect("postgres://x@localhost:" + port + "/db", 1, { queryDeadlineMs: 0 });
  await caught(sql\`SELECT 1\`);
  await Bun.sleep(50);
};
switch (scenario) {
  case "pool-refused": {
    // our pool to a database that refuses connections: postgres.js's own error, with the query attached
    const sql = connect("postgres://x@127.0.0.1:" + port + "/db", 1, { queryDeadlineMs: 0 });
    if (how === "reject") void sql\`SELECT 1\`.then(() => {}); // a query promise nobody handles
    else escape(await caught(sql\`SELECT 1\`));
    break;
  }
  case "fetch-refused": {
    // a webhook/processor call: the same ECONNREFUSED code, from fetch()
    if (how === "reject") void fetch("http://127.0.0.1:" + port + "/hook").then(() => {});
    else escape(await caught(fetch("http://127.0.0.1:" + port + "/hook")));
    break;
  }
  case "socket-reset": escape(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })); break;
  case "statement-timeout": {
    // a statement of ours cancelled by statement_timeout (57014): only an un-awaited query lets it escape
    const sql = connect(pgUrl, 1, { queryDeadlineMs: 0 });
    escape(await caught(sql.unsafe("SET statement_timeout = 20; SELECT pg_sleep(2)")));
    break;
  }
  case "deadlock": escape(new postgres.PostgresError({ code: "40P01", message: "deadlock detected" } as never)); break;
  // class 53 is raised to a statement (disk full, out of memory), except 53300, the server refusing a new session
  case "disk-full": escape(new postgres.PostgresError({ code: "53100", message: "could not extend file: No space left on device" } as never)); break;
  case "too-many-connections": escape(new postgres.PostgresError({ code: "53300", message: "sorry, too many clients already" } as never)); break;
  // a database configured as "localhost": its socket errors name the address the name resolved to
  case "named-host-socket": await namedPool(); escape(await socketError("localhost")); break;
  // another host (127.0.0.2 is not what localhost resolves to) on the database's port: a webhook on 5432, say
  case "other-host-same-port": await namedPool(); escape(await socketError("127.0.0.2")); break;
  default: escape(Object.assign(new Error("a bug"), { code: "EBUG" }));
}
setTimeout(() => { console.log("still serving"); process.exit(0); }, 500);
`,
  );
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(scenario: string, how: "reject" | "throw") {
  const proc = Bun.spawn(["bun", script, scenario, how, String(refusedPort), await serverUrl()], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, LOG_LEVEL: "warn" },
  });
  const [stdout, stderr, exit] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, exit };
}

const kindOf = (how: "reject" | "throw") => (how === "reject" ? "unhandledRejection" : "uncaughtException");

for (const how of ["reject", "throw"] as const) {
  const as = how === "reject" ? "a rejection" : "an exception";

  test(`a connection error of our own database pool nobody handled (${as}) is logged with its stack and the process keeps serving`, async () => {
    const r = await run("pool-refused", how);
    expect(r.exit).toBe(0);
    expect(r.stdout).toContain("still serving");
    const line = r.stderr.split("\n").find((l) => l.includes("database connection error escaped its caller"));
    expect(line).toBeDefined();
    const rec = JSON.parse(line!);
    expect(rec).toMatchObject({ level: "warn", kind: kindOf(how), code: "ECONNREFUSED", survived: 1 });
    expect(rec.stack).toContain("ECONNREFUSED");
  }, 20_000);

  for (const [scenario, code, what] of [
    ["named-host-socket", "ECONNREFUSED", "a socket error naming the address our database's host name resolved to, on its port,"],
    ["too-many-connections", "53300", "the server refusing a new connection of ours (53300 too_many_connections)"],
  ] as const) {
    test(`${what} that nobody handled (${as}) is survived`, async () => {
      const r = await run(scenario, how);
      expect(r.exit).toBe(0);
      expect(r.stdout).toContain("still serving");
      const line = r.stderr.split("\n").find((l) => l.includes("database connection error escaped its caller"));
      expect(line).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ level: "warn", kind: kindOf(how), code, survived: 1 });
    }, 20_000);
  }

  for (const [scenario, what] of [
    ["disk-full", "a statement of ours failing for lack of disk space (53100, class 53 but not a connection error)"],
    ["other-host-same-port", "a socket error of another host on our database's port (the database configured by host name)"],
    ["fetch-refused", "a fetch() refused with ECONNREFUSED (a webhook or processor host, not our database)"],
    ["socket-reset", "an ECONNRESET that names no database of ours"],
    ["statement-timeout", "a statement of ours cancelled by statement_timeout (57014)"],
    ["deadlock", "a deadlock (40P01) of a query of ours"],
    ["bug", "any other error"],
  ] as const) {
    test(`${what} that nobody handled (${as}) ends the process with exit code 1`, async () => {
      const r = await run(scenario, how);
      expect(r.exit).toBe(1);
      expect(r.stdout).not.toContain("still serving");
      expect(r.stderr).not.toContain("escaped its caller");
      const line = r.stderr.split("\n").find((l) => l.includes("the process exits"));
      expect(line).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ level: "error", msg: `${kindOf(how)}: the process exits` });
    }, 20_000);
  }
}
