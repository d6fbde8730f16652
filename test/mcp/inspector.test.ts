/** An independent client: the MCP Inspector's CLI mode lists the tools and calls search_products on the demo store. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let home: string;
const bin = join(import.meta.dir, "../../node_modules/.bin/mcp-inspector");

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  home = await mkdtemp(join(tmpdir(), "acs-inspector-home-"));
}, 60_000);
afterAll(async () => {
  await srv?.stop();
  await rm(home, { recursive: true, force: true });
});

async function inspector(...args: string[]): Promise<any> {
  const proc = Bun.spawn([bin, "--cli", `${srv.url}/demo-store/mcp`, "--transport", "http", ...args], {
    env: { ...process.env, HOME: home, NO_UPDATE_NOTIFIER: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`inspector exited ${code}: ${err}`);
  return JSON.parse(out);
}

test("the MCP Inspector CLI lists the demo store's 50 tools", async () => {
  const r = await inspector("--method", "tools/list");
  expect(r.tools.length).toBe(50);
  expect(r.tools.map((t: any) => t.name)).toContain("complete_checkout");
}, 60_000);

test("the MCP Inspector CLI calls search_products and gets structured results", async () => {
  const r = await inspector("--method", "tools/call", "--tool-name", "search_products", "--tool-arg", "query=headphones");
  expect(r.isError).toBeFalsy();
  expect(r.structuredContent.products.length).toBeGreaterThan(0);
}, 60_000);
