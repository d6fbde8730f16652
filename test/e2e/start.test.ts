/**
 * The README's start command, as a user runs it: `bun gateway/main.ts start` with no DATABASE_URL (embedded
 * Postgres in DATA_DIR), then SIGTERM. Proves the embedded default boots, seeds, answers health with the
 * spec's headers, and shuts down gracefully (exit 0, embedded Postgres stopped).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../..", import.meta.url).pathname;
let dataDir = "";
let proc: ReturnType<typeof Bun.spawn> | undefined;

afterAll(async () => {
  proc?.kill("SIGKILL");
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test("the embedded default starts with no configuration, answers health, and stops cleanly on SIGTERM", async () => {
  dataDir = await mkdtemp(join(tmpdir(), "acs-e2e-start-"));
  // port 0, and the URL read off the start line: a port picked beforehand can be taken by another test file's server
  // in between, and this test would then check that server (session 22: a CI run's roles test did)
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", PORT: "0", DATA_DIR: dataDir, LOG_LEVEL: "info" };
  proc = Bun.spawn(["bun", "gateway/main.ts", "start"], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  // drain the child's output (an unread pipe can block it) and keep it for the failure message
  let output = "";
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  void drain(proc.stdout as ReadableStream<Uint8Array>);
  void drain(proc.stderr as ReadableStream<Uint8Array>);
  let origin: string | undefined;
  let res: Response | undefined;
  // up to 60 s: a cold start initialises the embedded Postgres cluster and seeds the demo store, which took over 30 s
  // on this 2-core machine at load 18 (CI beside other work, session 15)
  for (let i = 0; i < 240 && !res; i++) {
    await Bun.sleep(250);
    origin ??= /"msg":"gateway listening".*?"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
    if (origin) res = await fetch(`${origin}/api/v1/health`).catch(() => undefined);
  }
  if (!res) console.error(`start output:\n${output}`);
  expect(res).toBeDefined();
  expect(res!.status).toBe(200);
  expect(res!.headers.get("x-agent-commerce")).toBe("1");
  expect(res!.headers.get("x-initiated-by")).toBe("ai-agent");
  expect(res!.headers.get("x-request-id")).toBeTruthy();
  const body = (await res!.json()) as { data: { database: { ok: boolean }; qtsp: { enabled: boolean } } };
  expect(body.data.database.ok).toBe(true);
  expect(body.data.qtsp.enabled).toBe(false);
  // the demo store was seeded: its MCP discovery endpoint answers without a key
  const mcp = await fetch(`${origin}/demo-store/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_products", arguments: { query: "headphones" } } }),
  });
  expect(mcp.status).toBe(200);
  expect(existsSync(join(dataDir, "pg", "PG_VERSION"))).toBe(true);

  proc.kill("SIGTERM");
  const code = await Promise.race([proc.exited, Bun.sleep(20_000).then(() => "timeout" as const)]);
  expect(code).toBe(0);
  // the embedded Postgres was stopped with the process: its pid file is gone
  expect(existsSync(join(dataDir, "pg", "postmaster.pid"))).toBe(false);
  expect(await fetch(`${origin}/api/v1/health`).catch(() => "refused")).toBe("refused");
  proc = undefined;
}, 90_000);
