/**
 * Several gateway processes of one machine on one port (REUSE_PORT, role gateway): Bun is one thread a process, so a
 * machine's other cores serve the API only through more processes, and SO_REUSEPORT lets them all listen on the one
 * port the balancer or the clients know. Two `bun gateway/main.ts gateway` with REUSE_PORT=true and the same PORT both
 * come up, the port answers (log-in included: actor messages over NATS) and keeps answering when either process stops;
 * a gateway without the option cannot take that port. Role start and PORT=0 are refused (test/unit/config.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freePort } from "../../infra/nats/local-cluster.ts";
import type { RoleProc } from "../helpers/role-process.ts";
import { startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";

let dep: Deployment | undefined;
let port = 0;
let first: RoleProc;
let second: RoleProc;

beforeAll(async () => {
  const d = await startDeployment(
    { prefix: "acs-dist-reuseport-", nats: "single", gateways: 0, users: [{ email: EMAIL, password: PASSWORD, role: "operator" }], env: { RATE_LIMITS_ENABLED: "false" } },
    (started) => (dep = started),
  );
  port = await freePort();
  first = await d.spawnRole("gateway", { PORT: String(port), REUSE_PORT: "true" });
  second = await d.spawnRole("gateway", { PORT: String(port), REUSE_PORT: "true" });
}, 120_000);

afterAll(async () => {
  await dep?.stop();
});

/** A request on a connection of its own (no keep-alive), so the kernel picks a listening process for each. */
async function fresh(path: string, init: { method?: string; body?: unknown; token?: string } = {}): Promise<{ status: number; body: { success?: boolean; data?: Record<string, unknown> } }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: init.method ?? "GET",
    keepalive: false,
    headers: {
      connection: "close",
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as { success?: boolean; data?: Record<string, unknown> } };
}

async function logIn(): Promise<string> {
  const r = await fresh("/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(r.status).toBe(200);
  return r.body.data!.token as string;
}

describe("gateways sharing a port (REUSE_PORT)", () => {
  test("two gateway processes with REUSE_PORT both listen on the same port", () => {
    expect(first.url).toBe(`http://127.0.0.1:${port}`);
    expect(second.url).toBe(`http://127.0.0.1:${port}`);
    expect(first.proc.exitCode).toBeNull();
    expect(second.proc.exitCode).toBeNull();
  });

  test("the shared port answers health, log-in and an authenticated read on fresh connections", async () => {
    for (let i = 0; i < 10; i++) expect((await fresh("/health")).status).toBe(200);
    const token = await logIn();
    // a token signed by one process is accepted by the other: one SITE_URL and SECRET_KEY for the deployment
    for (let i = 0; i < 10; i++) expect((await fresh("/api/v1/agent-keys", { token })).status).toBe(200);
  }, 60_000);

  test("a gateway without REUSE_PORT cannot take the port the sharing gateways hold", async () => {
    await expect(dep!.spawnRole("gateway", { PORT: String(port) })).rejects.toThrow(/exited with|in use/);
  }, 60_000);

  test("the port keeps answering when one of the sharing processes stops, and a new one can join it", async () => {
    first.proc.kill("SIGTERM");
    await first.proc.exited;
    for (let i = 0; i < 10; i++) expect((await fresh("/health")).status).toBe(200);
    const token = await logIn();
    expect((await fresh("/api/v1/agent-keys", { token })).status).toBe(200);
    const third = await dep!.spawnRole("gateway", { PORT: String(port), REUSE_PORT: "true" });
    second.proc.kill("SIGTERM");
    await second.proc.exited;
    for (let i = 0; i < 10; i++) expect((await fresh("/health")).status).toBe(200);
    expect(third.proc.exitCode).toBeNull();
  }, 90_000);
});
