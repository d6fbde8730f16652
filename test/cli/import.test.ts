/**
 * `bun run cli import <slug> catalog.jsonl` (infra/cli.ts) against a started server: the CLI is spawned as its own
 * process, logs in with the seeded owner's credentials from the environment and pushes the file.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getIndexer } from "../../search/indexer.ts";
import { createKey, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const ROOT = resolve(import.meta.dir, "../..");

const srv = useServer({ seed: true });
let key: TestKey;
let dir: string;

beforeAll(async () => {
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ["search", "compare", "merchants:read"] });
  dir = await mkdtemp(join(tmpdir(), "acs-cli-"));
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("a file with good lines, a bad JSON line and an invalid product exits 1, imports the good ones and reports the bad ones by line", async () => {
  const file = join(dir, "catalog.jsonl");
  const lines = [
    JSON.stringify({ externalId: "CLI-1", title: "Wombat Linen Cushion", price: 29.5, currency: "USD", stockQuantity: 7 }),
    "",
    "{not json",
    JSON.stringify({ externalId: "CLI-BAD", title: "Negative Teapot", price: -3, currency: "USD" }),
    JSON.stringify({ externalId: "CLI-2", title: "Wombat Oak Side Table", price: 149, currency: "USD" }),
  ];
  await writeFile(file, lines.join("\n") + "\n");
  const owner = merchantLogin(SLUG);
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: owner.email, ACS_PASSWORD: owner.password },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  expect(code).toBe(1);
  expect(out).toContain(`imported 2 of 4 lines into ${SLUG} (1 rejected, 1 not JSON)`);
  expect(err).toContain("line 3: not valid JSON, skipped");
  expect(err).toMatch(/rejected line 4 \(CLI-BAD\): price /);
  expect(err).not.toContain("CLI-1");

  const rows = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'CLI-%' ORDER BY 1`;
  expect(rows.map((r) => r.external_id)).toEqual(["CLI-1", "CLI-2"]);
  await getIndexer(srv.running.services)!.idle();
  const s = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "wombat", filters: { inStock: false } } });
  expect(s.status).toBe(200);
  expect(s.body.data.products.map((p: { title: string }) => p.title).sort()).toEqual(["Wombat Linen Cushion", "Wombat Oak Side Table"]);
}, 60_000);

test("wrong credentials exit 1 without importing anything", async () => {
  const file = join(dir, "one.jsonl");
  await writeFile(file, JSON.stringify({ externalId: "CLI-NOPE", title: "Never", price: 1, currency: "USD" }) + "\n");
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: merchantLogin(SLUG).email, ACS_PASSWORD: "wrong-password" },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await proc.exited).toBe(1);
  const rows = await srv.db.sql`SELECT 1 FROM products WHERE external_id = 'CLI-NOPE'`;
  expect(rows.length).toBe(0);
}, 60_000);
