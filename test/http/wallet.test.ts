/** Agent wallets over HTTP: provision (201/409/400), read (200/404), one wallet under concurrency, key sealed at rest. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getAddress } from "viem";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const provision = (key: TestKey, body?: unknown) =>
  srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: key.headers, ...(body === undefined ? {} : { body }) });
const read = (key: TestKey) => srv.json("/api/v1/agent/wallet", { headers: key.headers });

describe("agent wallets", () => {
  test("provisioning without a network makes a wallet on the test network and answers 201", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const res = await provision(key, {});
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data.network).toBe("eip155:84532");
    expect(res.body.data.address).toBe(getAddress(res.body.data.address));
    expect(Object.keys(res.body.data).sort()).toEqual(["address", "createdAt", "network"]);
    expect(new Date(res.body.data.createdAt).toISOString()).toBe(res.body.data.createdAt);
  });

  test("an empty request body also provisions on the test network", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const res = await provision(key);
    expect(res.status).toBe(201);
    expect(res.body.data.network).toBe("eip155:84532");
  });

  test("mainnet can be asked for by its CAIP-2 id", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const res = await provision(key, { network: "eip155:8453" });
    expect(res.status).toBe(201);
    expect(res.body.data.network).toBe("eip155:8453");
  });

  test("a second provision for the same agent identity is 409 and keeps the first wallet", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const first = await provision(key, { network: "eip155:84532" });
    expect(first.status).toBe(201);
    const second = await provision(key, { network: "eip155:8453" });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ success: false, code: "conflict" });
    expect(typeof second.body.error).toBe("string");
    const now = await read(key);
    expect(now.status).toBe(200);
    expect(now.body.data).toEqual(first.body.data);
  });

  test("any other network is 400 naming the field and the allowed values", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    for (const network of ["eip155:1", "base-sepolia", "", 84532, null]) {
      const res = await provision(key, { network });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, code: "validation_error", details: { field: "network", allowed: ["eip155:8453", "eip155:84532"] } });
    }
    // nothing was made by the refused calls
    expect((await read(key)).status).toBe(404);
  });

  test("reading the wallet before provisioning is 404", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const res = await read(key);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, code: "not_found" });
  });

  test("another agent identity never sees someone else's wallet", async () => {
    const owner = await createKey(srv, { scopes: ALL_SCOPES });
    const other = await createKey(srv, { scopes: ALL_SCOPES });
    expect((await provision(owner, {})).status).toBe(201);
    expect((await read(other)).status).toBe(404);
  });

  test("concurrent provisions for one agent create exactly one wallet", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const results = await Promise.all(Array.from({ length: 12 }, () => provision(key, {})));
    const created = results.filter((r) => r.status === 201);
    const conflicts = results.filter((r) => r.status === 409);
    expect(created.length).toBe(1);
    expect(conflicts.length).toBe(11);
    const rows = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM agent_wallets WHERE agent_key_id = ${key.id}`;
    expect(rows[0]!.n).toBe(1);
    expect((await read(key)).body.data.address).toBe(created[0]!.body.data.address);
  });

  test("the private key is stored sealed and is never part of an answer", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const res = await provision(key, {});
    const [row] = await srv.db.sql<{ sealed_private_key: string; address: string }[]>`
      SELECT sealed_private_key, address FROM agent_wallets WHERE agent_key_id = ${key.id}`;
    expect(row!.sealed_private_key).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(row!.sealed_private_key).not.toMatch(/0x[0-9a-f]{64}/i);
    const text = JSON.stringify(res.body) + JSON.stringify((await read(key)).body);
    expect(text).not.toContain(row!.sealed_private_key);
    expect(text.toLowerCase()).not.toMatch(/private|secret|sealed/);
  });

  test("wallet routes need the checkout scope and refuse SANDBOX keys", async () => {
    const narrow = await createKey(srv, { scopes: ["search"] });
    const a = await provision(narrow, {});
    expect(a.status).toBe(403);
    expect(a.body).toMatchObject({ code: "forbidden", details: { scope: "checkout" } });
    expect((await read(narrow)).status).toBe(403);
    const sandbox = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const b = await provision(sandbox, {});
    expect(b.status).toBe(403);
    expect(b.body.code).toBe("sandbox_not_allowed");
  });

  test("without a key the wallet routes answer 401", async () => {
    const res = await srv.json("/api/v1/agent/wallet");
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthorized");
  });
});
