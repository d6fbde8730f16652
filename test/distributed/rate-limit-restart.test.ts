/**
 * Rate limits that survive restarts of the actor hosts (audit Z-1): two actor hosts and one gateway over one private
 * nats-server. A rolling SIGTERM restart (each host stopped cleanly, a new one started in its place) keeps a STARTER
 * key's count (the hosts hand their buckets over on stop) and the failed-log-in counts (written on every attempt);
 * a kill -9 of every host keeps the failed-log-in counts too.
 *
 * Small log-in limits (2 per address, 3 per e-mail: configuration, the code path of production's 30 and 100). The
 * log-in attempts come from 127.0.x.y source addresses (node:http `localAddress`), so each bucket is a test's own.
 * The key is minted before any log-in bucket fills (a successful log-in is counted by the address bucket too).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";
const PER_IP = 2;
const PER_EMAIL = 3;

let dep: Deployment | undefined;
let gw: string;
let key: string;

beforeAll(async () => {
  const d = await startDeployment(
    {
      prefix: "acs-dist-rlr-",
      nats: "single",
      actors: 2,
      env: { LOGIN_LIMIT_PER_IP: String(PER_IP), LOGIN_LIMIT_PER_EMAIL: String(PER_EMAIL) },
      users: [{ email: EMAIL, password: PASSWORD, role: "operator" }],
    },
    (started) => (dep = started),
  );
  gw = d.gateways[0]!;
  const login = await json(`${gw}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(login.status).toBe(200);
  const created = await json(`${gw}/api/v1/agent-keys`, { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "restart" } });
  expect(created.status).toBe(201);
  key = created.body.data.key;
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A REST log-in from the given loopback source address. */
function loginFrom(from: string, email: string, password: string): Promise<Answer> {
  const url = new URL(gw);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path: "/api/v1/auth/login", method: "POST", headers: { "content-type": "application/json" }, localAddress: from },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ email, password }));
  });
}

/** A failed log-in (wrong password), answered 401. */
async function failLogin(from: string, email: string): Promise<void> {
  const r = await loginFrom(from, email, "wrong-password");
  expect({ status: r.status, code: r.body?.code }).toEqual({ status: 401, code: "unauthorized" });
}

/** The log-in buckets' 429: envelope, code and headers of the refusing bucket. */
function expectRefused(r: Answer, limit: number) {
  expect({ status: r.status, success: r.body?.success, code: r.body?.code }).toEqual({ status: 429, success: false, code: "rate_limit_exceeded" });
  expect(r.headers["x-ratelimit-limit"]).toBe(String(limit));
  expect(r.headers["x-ratelimit-remaining"]).toBe("0");
  expect(Number(r.headers["retry-after"])).toBeGreaterThan(0);
  expect(Number(r.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
}

/** Every actor host stopped with `signal` and a new one started in its place, one host after the other. */
async function restartHosts(signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  const d = dep!;
  for (let i = 0; i < d.actors.length; i++) {
    const old = d.actors[i]!;
    old.proc.kill(signal);
    const code = await old.proc.exited;
    if (signal === "SIGTERM") expect(code).toBe(0);
    d.actors[i] = await d.spawnRole("actors");
  }
}

/** A request to the key's route: no store is seeded, so an admitted request is 404 and a refused one 429. */
const keyed = () => json(`${gw}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } });

describe("a rolling SIGTERM restart of the actor hosts", () => {
  test("a STARTER key's bucket keeps its count: the request after the restart has one less remaining, same reset", async () => {
    let last!: Awaited<ReturnType<typeof keyed>>;
    for (let i = 0; i < 30; i++) {
      last = await keyed();
      expect(last.status).toBe(404);
    }
    expect(last.headers.get("x-ratelimit-limit")).toBe("100");
    expect(last.headers.get("x-ratelimit-remaining")).toBe("70");
    const reset = last.headers.get("x-ratelimit-reset");
    await restartHosts("SIGTERM");
    const after = await keyed();
    expect({ status: after.status, limit: after.headers.get("x-ratelimit-limit"), remaining: after.headers.get("x-ratelimit-remaining"), reset: after.headers.get("x-ratelimit-reset") }).toEqual({
      status: 404,
      limit: "100",
      remaining: "69",
      reset,
    });
  }, 60_000);

  test("an address and an e-mail that used up their failed log-ins are still refused with 429 after the restart", async () => {
    const victim = "victim@example.com";
    // the per-address bucket of 127.0.21.1 (2) and the per-e-mail bucket of the victim (3) used up
    await failLogin("127.0.21.1", victim);
    await failLogin("127.0.21.1", victim);
    expectRefused(await loginFrom("127.0.21.1", "other@example.com", "wrong-password"), PER_IP);
    await failLogin("127.0.21.2", victim);
    expectRefused(await loginFrom("127.0.21.3", victim, "wrong-password"), PER_EMAIL);

    await restartHosts("SIGTERM");

    expectRefused(await loginFrom("127.0.21.1", "other@example.com", "wrong-password"), PER_IP);
    expectRefused(await loginFrom("127.0.21.4", victim, "wrong-password"), PER_EMAIL);
    // the right password too: the bucket counts attempts before any password is checked
    expectRefused(await loginFrom("127.0.21.5", victim, PASSWORD), PER_EMAIL);
  }, 90_000);
});

describe("a kill -9 of every actor host", () => {
  test("keeps the failed log-in counts: the used-up address and e-mail are still refused with 429", async () => {
    const victim = "killed@example.com";
    await failLogin("127.0.22.1", victim);
    await failLogin("127.0.22.1", victim);
    await failLogin("127.0.22.2", victim);
    expectRefused(await loginFrom("127.0.22.3", victim, "wrong-password"), PER_EMAIL);

    await restartHosts("SIGKILL");

    // the first answers may wait for the dead hosts' partitions to be taken over (the gateway retries meanwhile)
    expectRefused(await loginFrom("127.0.22.1", "someone@example.com", "wrong-password"), PER_IP);
    expectRefused(await loginFrom("127.0.22.4", victim, "wrong-password"), PER_EMAIL);
  }, 90_000);
});
