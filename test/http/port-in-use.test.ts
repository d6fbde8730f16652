/**
 * A second service on a port in use fails at start: before session 19 Elysia's own default (`reusePort: true`) let a
 * second `bun run start` on the same machine, or an old process not yet stopped during a deploy, listen on the port
 * beside the first, and the kernel spread requests over both (two hosts of every actor, each over its own bus).
 * Sharing a port is now asked for explicitly (REUSE_PORT, gateway role only: test/distributed/gateways-share-port.test.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Running } from "../../gateway/boot.ts";
import { freePort } from "../../infra/nats/local-cluster.ts";
import { bootService, startServer, type TestServer } from "../helpers/server.ts";

let first: TestServer | undefined;
let second: Running | undefined;
const dirs: string[] = [];

afterAll(async () => {
  await second?.stop();
  await first?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test("a second service started on the port another one listens on fails with 'in use' instead of sharing it", async () => {
  const port = await freePort();
  first = await startServer({ config: { PORT: port } });
  expect(first.url).toBe(`http://127.0.0.1:${port}`);
  const dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  dirs.push(dataDir);
  let err: unknown;
  try {
    second = await bootService({ databaseUrl: first.db.url, dataDir, config: { PORT: port, SEED_DEMO: false } });
  } catch (e) {
    err = e;
  }
  expect(second).toBeUndefined();
  expect(String(err)).toMatch(/in use/);
  // the first one still serves the port alone
  expect((await first.fetch("/health")).status).toBe(200);
}, 60_000);
