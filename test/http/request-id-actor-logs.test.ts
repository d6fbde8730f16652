/**
 * An operator chasing a request by its X-Request-Id finds the actor turns' lines too (docs/operations.md, logs): the
 * real service in this process (gateway and actors over the in-process bus), its log captured. The request id the
 * response carries — the caller's own, or the one the gateway made — is on every line the request's actor turns
 * write: a handler's line and the host's line of a turn that failed. Over NATS between processes:
 * test/distributed/request-id-logs.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setLogLevel, setLogSink } from "../../infra/log.ts";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, in stock

let srv: TestServer;
const lines: Record<string, unknown>[] = [];
let restore: () => void = () => {};

beforeAll(async () => {
  restore = setLogSink((line) => void lines.push(JSON.parse(line)));
  // idle activations passivate at once, so the next request for a cart loads it again; a 503 after 2 s of retries
  srv = await startServer({ config: { LOG_LEVEL: "info", ACTOR_IDLE_MS: 100, ACTOR_ASK_TIMEOUT_MS: 2_000 } });
}, 120_000);
afterAll(async () => {
  setLogLevel("error");
  restore();
  await srv?.stop();
}, 60_000);

const provision = (headers: Record<string, string>) => srv.fetch("/api/v1/agent/wallet/provision", { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" });

describe("actor turns' lines carry the request id", () => {
  test("a handler's line names the caller's X-Request-Id", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const requestId = "trace-wallet-0001";
    const res = await provision({ ...key.headers, "x-request-id": requestId });
    expect(res.status).toBe(201);
    expect(res.headers.get("x-request-id")).toBe(requestId);
    const address = ((await res.json()) as { data: { address: string } }).data.address;
    const found = lines.filter((l) => l.msg === "wallet provisioned" && l.address === address);
    expect(found.length).toBe(1);
    expect(found[0]).toMatchObject({ level: "info", requestId, actor: `wallet/${key.id}` });
  }, 30_000);

  test("without a caller's id the line names the id the gateway answered with; concurrent requests keep their own", async () => {
    const keys = await Promise.all([0, 1, 2, 3].map(() => createKey(srv, { scopes: ALL_SCOPES })));
    const answers = await Promise.all(keys.map((k) => provision(k.headers)));
    for (const [i, res] of answers.entries()) {
      expect(res.status).toBe(201);
      const requestId = res.headers.get("x-request-id");
      expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const found = lines.filter((l) => l.msg === "wallet provisioned" && l.actor === `wallet/${keys[i]!.id}`);
      expect(found.length).toBe(1);
      expect(found[0]!.requestId).toBe(requestId);
    }
  }, 30_000);

  test("the host's line of an actor that cannot be activated names the request that found it", async () => {
    const key = await createKey(srv, { scopes: ["cart"] });
    const created = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    await Bun.sleep(400); // passivated: the next request loads it
    // a state its onActivate cannot read: the load throws, and the caller gets 503 actor_unavailable
    await srv.db.sql`UPDATE actor_state SET state = 'null'::jsonb WHERE kind = 'cart' AND id = ${id}`;
    const requestId = "trace-activation-0001";
    const res = await srv.fetch(`/api/v1/agent/cart/${id}`, { headers: { ...key.headers, "x-request-id": requestId } });
    expect(res.status).toBe(503);
    expect(res.headers.get("x-request-id")).toBe(requestId);
    const found = lines.filter((l) => l.msg === "could not activate an actor" && l.id === id);
    expect(found.length).toBeGreaterThanOrEqual(1);
    for (const line of found) expect(line).toMatchObject({ level: "error", kind: "cart", requestId });
  }, 60_000);
});
