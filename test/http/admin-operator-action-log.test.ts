/**
 * Every operator write leaves a log line naming the operator (helper F, session 20): a plan change, an agent key's
 * revocation, the search settings, a reindex, a trust recompute or a signing-key rotation said nothing of who did it.
 * Each /api/v1/admin write now logs `operator action` with the operator's user id, the method, the path (ids, no
 * query, no body) and the status, in the request's scope; reads and refused attempts do not.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setLogSink } from "../../infra/log.ts";
import { createKey, login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let admin: Record<string, string>;
let operatorId: string;
const lines: Array<Record<string, unknown>> = [];
let restore: () => void = () => undefined;

beforeAll(async () => {
  restore = setLogSink((line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      /* not a JSON line */
    }
  });
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, LOG_LEVEL: "info" } });
  admin = { authorization: `Bearer ${await login(srv, { email: "admin@example.com", password: "admin-password" })}` };
  const [u] = await srv.db.sql<{ id: string }[]>`SELECT id FROM users WHERE email = 'admin@example.com'`;
  operatorId = u!.id;
}, 60_000);

afterAll(async () => {
  restore();
  await srv?.stop();
});

/** The operator-action lines written since `from`. */
const actions = (from: number) => lines.slice(from).filter((l) => l.msg === "operator action");

/**
 * The operator-action lines since `from`, once they stopped coming: the line is written after the answer was sent
 * (Elysia's onAfterResponse), so it may follow the client's read of the answer by a moment.
 */
async function settled(from: number): Promise<Array<Record<string, unknown>>> {
  let seen = -1;
  for (let quiet = 0; quiet < 3; ) {
    await Bun.sleep(50);
    const n = actions(from).length;
    quiet = n === seen ? quiet + 1 : 0;
    seen = n;
  }
  return actions(from);
}

describe("operator writes are logged with the operator who made them", () => {
  test("a plan change, a key revocation, the search settings, a trust recompute and a key rotation each log the operator, method, path and status", async () => {
    const key = await createKey(srv, { scopes: ["search"] });
    const [k] = await srv.db.sql<{ id: string }[]>`SELECT id FROM agent_keys ORDER BY created_at DESC LIMIT 1`;
    const calls: Array<[string, string, Record<string, unknown> | undefined]> = [
      ["PUT", "/api/v1/admin/users/plan", { email: "admin@example.com", plan: "PRO" }],
      ["DELETE", `/api/v1/admin/agent-keys/${k!.id}`, undefined],
      ["PUT", "/api/v1/admin/search/settings", { candidateWindow: 900 }],
      ["POST", "/api/v1/admin/trust/recompute", { slug: "demo-store" }],
      ["POST", "/api/v1/admin/trust/keys/rotate", {}],
    ];
    for (const [method, path, body] of calls) {
      const from = lines.length;
      const r = await srv.json(path, { method, headers: admin, ...(body === undefined ? {} : { body }) });
      expect({ path, status: r.status }).toEqual({ path, status: r.status < 300 ? r.status : -1 });
      const logged = await settled(from);
      expect(logged.length).toBe(1);
      expect(logged[0]).toMatchObject({ level: "info", by: operatorId, method, path, status: r.status });
      expect(typeof logged[0]!.requestId).toBe("string");
    }
    // the revoked key no longer works: the logged action is the one that happened
    expect((await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "lamp" } })).status).toBe(401);
  }, 60_000);

  test("an operator's read logs no action, and neither does a merchant refused at an admin route", async () => {
    const from = lines.length;
    expect((await srv.json("/api/v1/admin/search/settings", { headers: admin })).status).toBe(200);
    const merchant = { authorization: `Bearer ${await login(srv, merchantLogin("northwind-outfitters"))}` };
    expect((await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: merchant, body: { slug: "demo-store" } })).status).toBe(403);
    expect(await settled(from)).toEqual([]);
  });

  test("a refused operator write is logged with the status it got, and no query or body in the line", async () => {
    const from = lines.length;
    const r = await srv.json("/api/v1/admin/users/plan?secret=zzz", { method: "PUT", headers: admin, body: { email: "nobody@example.com", plan: "PRO" } });
    expect(r.status).toBeGreaterThanOrEqual(400);
    const logged = await settled(from);
    expect(logged.length).toBe(1);
    expect(logged[0]).toMatchObject({ by: operatorId, method: "PUT", path: "/api/v1/admin/users/plan", status: r.status });
    expect(JSON.stringify(logged[0])).not.toContain("zzz");
    expect(JSON.stringify(logged[0])).not.toContain("nobody@example.com");
  });
});
