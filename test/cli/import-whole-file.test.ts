/**
 * `bun run cli import` reads the file line by line and its result does not depend on --batch (audit A2 LOW-2): a
 * line repeating an earlier externalId is refused whichever batch it falls in, and an item the API rejects (here a
 * lone surrogate, audit A2 MED-3) does not stop the lines after it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readLines } from "../../infra/cli.ts";
import { merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const ROOT = resolve(import.meta.dir, "../..");

let srv: TestServer;
let dir: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  dir = await mkdtemp(join(tmpdir(), "acs-cli-a2-"));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function runImport(file: string, batch: number) {
  const owner = merchantLogin(SLUG);
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file, "--batch", String(batch)], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: owner.email, ACS_PASSWORD: owner.password },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, out, err };
}

test("a repeated externalId is refused across the whole file with any --batch, and a bad line does not stop the rest", async () => {
  for (const batch of [1, 2, 1000]) {
    const tag = `CLI-A2-B${batch}`;
    const file = join(dir, `dup-${batch}.jsonl`);
    await writeFile(
      file,
      [
        JSON.stringify({ externalId: `${tag}-1`, title: "CLI one", price: 5, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-2`, title: "CLI two", price: 7, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-1`, title: "CLI one AGAIN", price: 6, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-3`, title: "Broken \ud800 title", price: 8, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-4`, title: "CLI four", price: 9, currency: "USD" }),
      ].join("\r\n"),
    );
    const r = await runImport(file, batch);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`imported 3 of 5 lines into ${SLUG} (2 rejected, 0 not JSON)`);
    expect(r.err).toContain(`rejected line 3 (${tag}-1): externalId repeated in this file (first on line 1)`);
    expect(r.err).toMatch(new RegExp(`rejected line 4 \\(${tag}-3\\): title `));
    const rows = await srv.db.sql<{ external_id: string; title: string; price_minor: number }[]>`
      SELECT external_id, title, price_minor FROM products WHERE store_slug = ${SLUG} AND external_id LIKE ${tag + "-%"} ORDER BY 1`;
    expect(rows.map((x) => [x.external_id, x.title, Number(x.price_minor)])).toEqual([
      [`${tag}-1`, "CLI one", 500],
      [`${tag}-2`, "CLI two", 700],
      [`${tag}-4`, "CLI four", 900],
    ]);
    const [h] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM product_price_history h JOIN products p ON p.id = h.product_id
      WHERE p.external_id = ${tag + "-1"}`;
    expect(h!.n).toBe(1);
  }
}, 120_000);

test("lines are read in chunks with their numbers: CRLF, blank lines, lines across chunk boundaries and no final newline", async () => {
  const file = join(dir, "lines.txt");
  const long = "x".repeat(200_000); // longer than a read chunk
  await writeFile(file, `a\r\n\nb\n${long}\nlast`);
  const got: [number, string][] = [];
  for await (const l of readLines(file)) got.push([l.line, l.text.length > 20 ? `len ${l.text.length}` : l.text]);
  expect(got).toEqual([[1, "a"], [2, ""], [3, "b"], [4, "len 200000"], [5, "last"]]);
});
