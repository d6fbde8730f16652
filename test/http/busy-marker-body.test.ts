/**
 * Review R2, G-3: over NATS, a cart whose payment turn checkpointed on another host and may still be running there
 * (a live pending marker in actor_inbox) is not loaded elsewhere; a request for it is answered 503
 * actor_unavailable once the caller's retries run out. That body named the other host (`<hostname>-<pid>-<random>`)
 * to API clients. It now says the same neutral sentence whatever the host; the host goes to the log.
 *
 * The real service (role start) on a private one-node NATS (JetStream), the other host a member of its
 * membership bucket that heartbeats as a host does (it serves no kind, so the service owns every partition).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Membership } from "../../actors/transport/placement.ts";
import { freePort } from "../../infra/nats/local-cluster.ts";
import { setLogSink } from "../../infra/log.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const OTHER_HOST = "payments-host-7-pid-4242-x1y2";
const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, in stock

let natsDir = "";
let nats: Subprocess | undefined;
let srv: TestServer;
let nc: NatsConnection;
let other: Membership;
let key: TestKey;
const logLines: string[] = [];
let restoreSink: () => void = () => {};

beforeAll(async () => {
  // one plain JetStream server of its own (local-cluster.ts makes clusters of 2 or more nodes)
  natsDir = await mkdtemp(join(tmpdir(), "acs-g3-nats-"));
  const port = await freePort();
  const natsUrl = `nats://127.0.0.1:${port}`;
  nats = Bun.spawn([Bun.which("nats-server") ?? "/usr/sbin/nats-server", "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", natsDir], { stdout: "ignore", stderr: "ignore" });
  for (let i = 0; ; i++) {
    const probe = await connect({ servers: natsUrl }).catch(() => undefined);
    if (probe) {
      await probe.close();
      break;
    }
    if (i > 100 || nats.exitCode !== null) throw new Error("nats-server did not start");
    await Bun.sleep(100);
  }
  restoreSink = setLogSink((line) => void logLines.push(line));
  // idle activations passivate at once: the next request for the cart loads it (and so meets the marker)
  // asks give up after 2 s instead of the client's 10 s: the 503 comes when the caller's retries run out
  srv = await startServer({ config: { NATS_URL: natsUrl, ACTOR_IDLE_MS: 100, LOG_LEVEL: "info", ACTOR_ASK_TIMEOUT_MS: 2_000 } });
  nc = await connect({ servers: natsUrl });
  other = new Membership({
    nc,
    hostId: OTHER_HOST,
    replicas: 1,
    onChange: () => {},
    beat: () => ({ kinds: [], partitions: 64, activations: {}, owned: {}, startedAt: Date.now(), pid: 4242, hostname: "payments-host-7" }),
  });
  await other.start();
  key = await createKey(srv, { scopes: ["cart"] });
}, 120_000);
afterAll(async () => {
  await other?.stop(true);
  await nc?.close();
  await srv?.stop();
  restoreSink();
  nats?.kill("SIGKILL");
  await nats?.exited;
  if (natsDir) await rm(natsDir, { recursive: true, force: true });
});

test("a cart held back by another host's live pending marker answers 503 with a message that names no host", async () => {
  const created = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(created.status).toBe(201);
  const id: string = created.body.data.id;
  // the other host's payment turn checkpointed and is in its outside call
  await srv.db.sql`INSERT INTO actor_inbox (kind, id, msg_id, reply, expires_at, pending_until, pending_turn)
    VALUES ('cart', ${id}, 'g3-payment', NULL, now() + interval '2 minutes', now() + interval '2 minutes', ${`${OTHER_HOST}/${crypto.randomUUID()}`})`;
  await Bun.sleep(400); // the cart's activation has passivated

  const res = await srv.fetch(`/api/v1/agent/cart/${id}`, { headers: key.headers });
  const text = await res.text();
  expect(res.status).toBe(503);
  expect(JSON.parse(text)).toMatchObject({
    success: false,
    code: "actor_unavailable",
    error: "An earlier request for this resource is still being processed; retry shortly.",
  });
  expect(text).not.toContain(OTHER_HOST);
  expect(text).not.toContain("4242");
  expect(text).not.toContain("host");
  // the operator still finds out which host holds the cart
  expect(logLines.some((l) => l.includes("pending marker") && l.includes(OTHER_HOST))).toBe(true);

  // the marker alone held it back: once the other host's reply replaces it (here: it is gone), the cart answers
  await srv.db.sql`DELETE FROM actor_inbox WHERE kind = 'cart' AND id = ${id}`;
  const after = await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });
  expect(after.status).toBe(200);
}, 60_000);
