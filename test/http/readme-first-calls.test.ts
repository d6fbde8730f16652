/**
 * The README's "First calls" block, replayed as written (bash + curl + jq) against a real server with the demo seed,
 * so the newcomer's first walk-through cannot rot: its last line must print "COMPLETED". Only `B=` is rewritten to
 * point at the test server. jq and curl are required (`.ci/run` installs them): missing tools fail, not skip.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "../helpers/server.ts";

/** The first fenced sh/bash block under the "## First calls" heading of README.md. */
function firstCallsBlock(readme: string): string {
  const start = readme.search(/^## First calls\b/m);
  if (start < 0) throw new Error('README.md has no "## First calls" heading');
  const rest = readme.slice(start);
  const next = rest.slice(3).search(/^## /m);
  const section = next < 0 ? rest : rest.slice(0, next + 3);
  const m = /^```(?:sh|bash)\n([\s\S]*?)^```/m.exec(section);
  if (!m) throw new Error('no ```sh block under "## First calls"');
  return m[1]!;
}

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(async () => {
  await srv?.stop();
});

test("curl and jq are installed (the README block needs them; .ci/run installs them)", () => {
  expect(Bun.which("curl")).not.toBeNull();
  expect(Bun.which("jq")).not.toBeNull();
});

test("README First calls: the block as written ends in \"COMPLETED\"", async () => {
  const block = firstCallsBlock(readFileSync(join(import.meta.dir, "../../README.md"), "utf8"));
  expect(block).toMatch(/^B=http:\/\/127\.0\.0\.1:3000$/m);
  const script = block.replace(/^B=.*$/m, `B=${srv.url}`);
  // a proxy set for the machine must not carry curl's loopback calls
  const env = { ...process.env, no_proxy: "127.0.0.1,localhost", NO_PROXY: "127.0.0.1,localhost" };
  const proc = Bun.spawn(["bash", "-c", script], { stdout: "pipe", stderr: "pipe", env });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  expect(out.trim().split("\n").at(-1)).toBe('"COMPLETED"');
}, 60_000);
