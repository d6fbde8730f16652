/**
 * `bun run cli import` flushes a batch by size as well as by line count: 1,000 lines of 9 KB are 9 MB, over the
 * merchant routes' 8 MiB body limit, and the import used to fail with 413 on a file the dashboard takes (audit
 * A3-5). The repeat rule still holds across a flush made for size.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BATCH_BYTES } from "../../infra/cli.ts";
import { merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const ROOT = resolve(import.meta.dir, "../..");

const srv = useServer({ seed: true });
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-cli-bytes-"));
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("1,000 lines of 9 KB (9 MB) are imported in batches under the body limit; a repeat on the first line of a size-flushed batch is refused", async () => {
  const products = Array.from({ length: 1000 }, (_, i) => ({
    externalId: `BIG-${i}`,
    title: `Big Description Lamp ${i}`,
    description: `${i} `.padEnd(9000, "lorem ipsum dolor sit amet "),
    price: 10 + i,
    currency: "USD",
  }));
  // the first line that does not fit in the first batch repeats the externalId of the line before it
  let bytes = 0;
  let k = 0;
  while (bytes + Buffer.byteLength(JSON.stringify(products[k])) + 1 <= BATCH_BYTES) bytes += Buffer.byteLength(JSON.stringify(products[k++])) + 1;
  expect(k).toBeGreaterThan(100);
  expect(k).toBeLessThan(1000);
  products[k] = { ...products[k]!, externalId: `BIG-${k - 1}`, title: "Should Not Replace" };
  const file = join(dir, "big.jsonl");
  const text = products.map((p) => JSON.stringify(p)).join("\n") + "\n";
  expect(Buffer.byteLength(text)).toBeGreaterThan(8 * 1024 * 1024);
  await writeFile(file, text);

  const owner = merchantLogin(SLUG);
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: owner.email, ACS_PASSWORD: owner.password },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  expect(err).not.toContain("failed (413)");
  expect(out).toContain(`imported 999 of 1000 lines into ${SLUG} (1 rejected, 0 not JSON)`);
  expect(err).toContain(`rejected line ${k + 1} (BIG-${k - 1}): externalId repeated in this file (imported from line ${k}`);
  expect(code).toBe(1);

  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'BIG-%'`;
  expect(n).toBe(999);
  const [row] = await srv.db.sql<{ title: string }[]>`SELECT title FROM products WHERE store_slug = ${SLUG} AND external_id = ${`BIG-${k - 1}`}`;
  expect(row!.title).toBe(`Big Description Lamp ${k - 1}`);
}, 120_000);

test("a batch that fails after earlier ones were imported says that those stay imported", async () => {
  const file = join(dir, "partial.jsonl");
  const lines = [
    JSON.stringify({ externalId: "PART-1", title: "Small lamp", price: 5, currency: "USD" }),
    JSON.stringify({ externalId: "PART-2", title: "Small vase", price: 6, currency: "USD" }),
    // alone over the route's 8 MiB body limit: its batch is refused with 413
    JSON.stringify({ externalId: "PART-HUGE", title: "Huge", price: 1, currency: "USD", description: "x".repeat(9 * 1024 * 1024) }),
  ];
  await writeFile(file, lines.join("\n") + "\n");
  const owner = merchantLogin(SLUG);
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: owner.email, ACS_PASSWORD: owner.password },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  expect(code).toBe(1);
  expect(err).toMatch(/cli import: batch starting at line 3 failed \(413\): Request body exceeds 8388608 bytes for \/api\/v1\/merchant\/stores\/greenleaf-living\/catalog\. \(the 2 lines accepted before it stay imported\)\n/);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'PART-%'`;
  expect(n).toBe(2);
}, 60_000);
