/**
 * The trust score JWS's `iss` in the two-role deployment (review R4-1): the trust actor runs on the actor host, which
 * signed with its own default `http://HOST:PORT` (an address that serves nothing) when only the gateway had SITE_URL.
 * Now an actor host without SITE_URL (outside production, where it is refused) signs with no `iss`, and one with the
 * deployment's SITE_URL signs with it. One actor host at a time over a local NATS cluster, one gateway with SITE_URL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { hashPassword } from "../../infra/passwords.ts";
import { startLocalCluster, type LocalCluster } from "../../infra/nats/local-cluster.ts";
import { spawnRole as spawnRoleProcess, type RoleProc } from "../helpers/role-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const EMAIL = "ops-iss@example.com";
const PASSWORD = "distributed-password";
const SITE = "http://shop-iss.test";
// fixed, non-zero actor host ports (F6's range): with PORT=0 the old default already named no issuer
const ACTORS_PORT = [55010, 55011];

let cluster: LocalCluster;
let db: TestDatabase;
let dir: string;
const procs: RoleProc[] = [];
let env: Record<string, string>;
let gw = "";
let token = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-dist-iss-"));
  [cluster, db] = await Promise.all([startLocalCluster({ dir: join(dir, "nats") }), createTestDatabase({ seeded: true })]);
  await db.sql`INSERT INTO users (email, password_hash, role) VALUES (${EMAIL}, ${await hashPassword(PASSWORD)}, 'operator')`;
  env = {
    NATS_URL: cluster.url,
    DATABASE_URL: db.url,
    SECRET_KEY: "ac".repeat(32),
    DATA_DIR: join(dir, "data"),
    HOST: "127.0.0.1",
    ACTOR_PARTITIONS: "16",
    LOG_LEVEL: "info",
    SEED_DEMO: "false",
    NODE_ENV: "test",
    SITE_URL: "",
  };
}, 90_000);

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.proc.exited));
  await cluster?.stop().catch(() => {});
  await db?.drop().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
});

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Recomputes demo-store through the gateway (the trust actor signs on the actor host) and returns its JWS's claims. */
async function signedClaims(): Promise<Record<string, unknown>> {
  const r = await json(`${gw}/api/v1/admin/trust/recompute`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { slug: "demo-store" } });
  expect(r.status).toBe(200);
  const pub = await json(`${gw}/api/v1/stores/demo-store/trust-score`);
  expect(pub.status).toBe(200);
  return decodeJwt(pub.body.data.jws as string) as Record<string, unknown>;
}

describe("trust JWS issuer with the actors role apart from the gateway", () => {
  test("an actor host without SITE_URL signs with no iss, not its own address", async () => {
    await spawnRoleProcess("actors", { ...env, PORT: String(ACTORS_PORT[0]) }, procs);
    const g = await spawnRoleProcess("gateway", { ...env, PORT: "0", SITE_URL: SITE }, procs);
    gw = g.url!;
    const login = await json(`${gw}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect(login.status).toBe(200);
    token = login.body.data.token;
    const claims = await signedClaims();
    expect(claims.iss).toBeUndefined();
    expect(claims.sub).toBeDefined();
  }, 90_000);

  test("an actor host with the deployment's SITE_URL signs with iss = SITE_URL", async () => {
    // SIGTERM: the host deletes its heartbeat, so the next one owns every partition at once
    const first = procs[0]!;
    first.proc.kill("SIGTERM");
    await first.proc.exited;
    await spawnRoleProcess("actors", { ...env, PORT: String(ACTORS_PORT[1]), SITE_URL: SITE }, procs);
    expect((await signedClaims()).iss).toBe(SITE);
  }, 90_000);
});
