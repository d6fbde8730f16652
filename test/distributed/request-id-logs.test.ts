/**
 * Over NATS between processes, an operator holding a request's X-Request-Id finds the actor host's lines of it: one
 * `bun gateway/main.ts actors` and one `… gateway` over a private 1-node NATS, the actor host's stderr read line by
 * line. The id rides in the actor message's envelope (`requestId`); the host's turn lines — a handler's and the
 * host's own for an actor that cannot be activated — carry it (docs/operations.md, logs).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES } from "../helpers/agents.ts";
import type { RoleProc } from "../helpers/role-process.ts";
import type { TestDatabase } from "../helpers/db.ts";
import { json as fetchJson, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";

let dep: Deployment | undefined;
let db: TestDatabase;
let host: RoleProc;
let gw: string;

beforeAll(async () => {
  const d = await startDeployment(
    {
      prefix: "acs-dist-rid-",
      nats: "single",
      users: [{ email: EMAIL, password: PASSWORD, role: "operator" }],
      env: {
        METRICS_PORT: "0",
        ACTOR_PARTITIONS: "8",
        // idle activations passivate at once, so the next message loads the actor again
        ACTOR_IDLE_MS: "200",
        ACTOR_ASK_TIMEOUT_MS: "2000", // the unreadable wallet's 503 after 2 s of retries instead of 10 s
      },
    },
    (started) => (dep = started),
  );
  db = d.db;
  host = d.actors[0]!;
  gw = d.gateways[0]!;
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

const json = (path: string, init?: Parameters<typeof fetchJson>[1]) => fetchJson(gw + path, init);

/** The actor host's JSON lines matching `pred`, waited for up to `ms` (its stderr arrives through a pipe). */
async function hostLines(pred: (l: Record<string, unknown>) => boolean, ms = 5000): Promise<Record<string, unknown>[]> {
  const until = Date.now() + ms;
  for (;;) {
    const found = host.output.flatMap((line) => {
      try {
        const l = JSON.parse(line) as Record<string, unknown>;
        return pred(l) ? [l] : [];
      } catch {
        return [];
      }
    });
    if (found.length > 0 || Date.now() > until) return found;
    await Bun.sleep(50);
  }
}

describe("the actor host's lines over NATS", () => {
  test("a turn's line on the actor host names the X-Request-Id of the gateway request that sent its message", async () => {
    const login = await json("/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect(login.status).toBe(200);
    const created = await json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "dist", scopes: ALL_SCOPES } });
    expect(created.status).toBe(201);
    const key = { id: created.body.data.id as string, headers: { "x-agent-api-key": created.body.data.key as string } };

    const requestId = "dist-trace-wallet-0001";
    const provisioned = await json("/api/v1/agent/wallet/provision", { method: "POST", headers: { ...key.headers, "x-request-id": requestId }, body: {} });
    expect(provisioned.status).toBe(201);
    expect(provisioned.headers.get("x-request-id")).toBe(requestId);
    const [line, ...more] = await hostLines((l) => l.msg === "wallet provisioned" && l.agentKeyId === key.id);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "info", requestId, actor: `wallet/${key.id}`, address: provisioned.body.data.address });

    // the wallet's state made unreadable after its activation passivated: the host cannot activate it
    await Bun.sleep(500);
    await db.sql`UPDATE actor_state SET state = 'null'::jsonb WHERE kind = 'wallet' AND id = ${key.id}`;
    const failing = "dist-trace-activation-01";
    const read = await json("/api/v1/agent/wallet", { headers: { ...key.headers, "x-request-id": failing } });
    expect(read.status).toBe(503);
    expect(read.headers.get("x-request-id")).toBe(failing);
    const failed = await hostLines((l) => l.msg === "could not activate an actor" && l.id === key.id);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const l of failed) expect(l).toMatchObject({ level: "error", kind: "wallet", requestId: failing });
  }, 60_000);
});
