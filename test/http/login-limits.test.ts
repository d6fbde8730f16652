/**
 * Password log-in hardening (security audit C-2, C-3): every stored hash costs what the dummy hash costs (so the
 * response time does not tell which e-mails exist), old hashes are upgraded on a successful log-in, the three
 * password forms share one log-in bucket per address and per e-mail, and concurrent verifications are bounded.
 *
 * Requests that must come from distinct client addresses are sent from 127.0.0.x source addresses (node:http
 * `localAddress`), so each test has buckets of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import { currentPhcParameters, phcParameters, VERIFY_IN_FLIGHT, VERIFY_QUEUE } from "../../infra/passwords.ts";
import { ADMIN, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: () => any;
}

/** One HTTP request to `srv` from the given loopback source address. */
function requestFrom(srv: TestServer, from: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const url = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path, method: init.method ?? "GET", headers: init.headers ?? {}, localAddress: from },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

const restLogin = (srv: TestServer, from: string, email: string, password: string) =>
  requestFrom(srv, from, "/api/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });

/** The dashboard's log-in form as a browser submits it (its CSRF cookie and token first). */
async function dashboardLogin(srv: TestServer, from: string, email: string, password: string): Promise<Answer> {
  const page = await requestFrom(srv, from, "/dashboard/login");
  const cookie = String(page.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return requestFrom(srv, from, "/dashboard/login", {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, email, password, next: "/dashboard" }).toString(),
  });
}

/** The OAuth consent form submitted with decision=allow for a freshly registered public client. */
async function consentLogin(srv: TestServer, from: string, email: string, password: string): Promise<Answer> {
  const reg = await srv.json("/api/v1/oauth/register", { method: "POST", body: { client_name: "t", redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" } });
  const q = new URLSearchParams({
    response_type: "code",
    client_id: reg.body.client_id,
    redirect_uri: "http://127.0.0.1:9/cb",
    code_challenge: "a".repeat(43),
    code_challenge_method: "S256",
    resource: `${srv.url}/demo-store/mcp`,
  });
  const page = await requestFrom(srv, from, `/api/v1/oauth/authorize?${q}`);
  expect(page.status).toBe(200);
  const cookie = String(page.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
  const form = new URLSearchParams();
  for (const m of page.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, "&"));
  form.set("email", email);
  form.set("password", password);
  form.set("decision", "allow");
  return requestFrom(srv, from, "/api/v1/oauth/authorize", { method: "POST", headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
}

function expectLoginRefused(r: Answer) {
  expect(r.status).toBe(429);
  expect(r.json()).toMatchObject({ success: false, code: "rate_limit_exceeded" });
  expect(Number(r.headers["retry-after"])).toBeGreaterThan(0);
  expect(r.headers["x-ratelimit-remaining"]).toBe("0");
  expect(Number(r.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
}

describe("password hashes", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("every seeded account's hash has the PHC parameters of the dummy hash verified for unknown e-mails", async () => {
    const rows = await srv.db.sql<{ email: string; password_hash: string }[]>`SELECT email, password_hash FROM users`;
    expect(rows.length).toBeGreaterThan(1);
    const dummy = await currentPhcParameters();
    expect(dummy).toBe("argon2id$v=19$m=65536,t=3,p=1");
    for (const r of rows) expect({ email: r.email, params: phcParameters(r.password_hash) }).toEqual({ email: r.email, params: dummy });
  });

  test("a successful log-in re-hashes a hash of older parameters; a failed one leaves it alone", async () => {
    const email = "old-hash@example.com";
    const old = await Bun.password.hash("old-password-1", { algorithm: "argon2id", memoryCost: 19456, timeCost: 2 });
    await srv.db.sql`INSERT INTO users (id, email, password_hash, role) VALUES (${crypto.randomUUID()}, ${email}, ${old}, 'merchant')`;
    const hashOf = async () => (await srv.db.sql<{ password_hash: string }[]>`SELECT password_hash FROM users WHERE email = ${email}`)[0]!.password_hash;

    expect((await restLogin(srv, "127.0.0.2", email, "wrong-password")).status).toBe(401);
    expect(await hashOf()).toBe(old);

    expect((await restLogin(srv, "127.0.0.2", email, "old-password-1")).status).toBe(200);
    const upgraded = await hashOf();
    expect(upgraded).not.toBe(old);
    expect(phcParameters(upgraded)).toBe(await currentPhcParameters());
    // the new hash is of the same password
    expect((await restLogin(srv, "127.0.0.2", email, "old-password-1")).status).toBe(200);
    expect(await hashOf()).toBe(upgraded);
  });
});

describe("the shared log-in bucket", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("successful log-ins do not use up the bucket", async () => {
    for (let i = 0; i < 32; i++) {
      const r = await restLogin(srv, "127.0.0.3", ADMIN.email, ADMIN.password);
      expect(r.status).toBe(200);
    }
  }, 120_000);

  test("after 30 failed attempts from one address, the REST log-in, the consent form and the dashboard all answer 429", async () => {
    const from = "127.0.0.4";
    for (let i = 0; i < 30; i++) {
      const r = await restLogin(srv, from, `nobody${i}@example.com`, "wrong-password");
      expect(r.status).toBe(401);
      expect(r.headers["x-ratelimit-limit"]).toBe("30");
      expect(r.headers["x-ratelimit-remaining"]).toBe(String(29 - i));
    }
    // the right password is refused as well now: the bucket is checked before any hash
    expectLoginRefused(await restLogin(srv, from, ADMIN.email, ADMIN.password));
    expectLoginRefused(await consentLogin(srv, from, ADMIN.email, ADMIN.password));
    const dash = await dashboardLogin(srv, from, ADMIN.email, ADMIN.password);
    expect(dash.status).toBe(429);
    expect(Number(dash.headers["retry-after"])).toBeGreaterThan(0);
    // another address is not affected
    expect((await restLogin(srv, "127.0.0.5", ADMIN.email, ADMIN.password)).status).toBe(200);
  }, 120_000);

  test("failed attempts through the consent form and the dashboard count in the same bucket as the REST log-in", async () => {
    const from = "127.0.0.6";
    for (let i = 0; i < 10; i++) expect((await consentLogin(srv, from, ADMIN.email, "wrong-password")).status).toBe(401);
    for (let i = 0; i < 10; i++) expect((await dashboardLogin(srv, from, ADMIN.email, "wrong-password")).status).toBe(401);
    const r = await restLogin(srv, from, ADMIN.email, "wrong-password");
    expect(r.status).toBe(401);
    expect(r.headers["x-ratelimit-remaining"]).toBe("9");
  }, 120_000);

  test("one account takes at most 100 failed attempts per 15 minutes, from however many addresses", async () => {
    const victim = merchantLogin("demo-store").email;
    // 4 addresses × 25 attempts, 4 at a time (under the verification gate's bound)
    for (let round = 0; round < 25; round++) {
      const answers = await Promise.all([11, 12, 13, 14].map((n) => restLogin(srv, `127.0.0.${n}`, victim, `guess-${round}`)));
      for (const a of answers) expect(a.status).toBe(401);
    }
    expectLoginRefused(await restLogin(srv, "127.0.0.15", victim, "one-more-guess"));
    // the same fresh address may still try another account
    expect((await restLogin(srv, "127.0.0.15", ADMIN.email, "wrong-password")).status).toBe(401);
  }, 180_000);
});

describe("concurrent password checks", () => {
  let srv: TestServer;
  beforeAll(async () => {
    // no buckets, so only the verification gate stands between a burst and the hashing threads
    srv = await startServer({ config: { RATE_LIMITS_ENABLED: false } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("a burst beyond the verification slots and queue is answered 503 service_unavailable with Retry-After at once", async () => {
    const burst = VERIFY_IN_FLIGHT + VERIFY_QUEUE + 30;
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: burst }, (_, i) => restLogin(srv, "127.0.0.1", `burst${i}@example.com`, "wrong-password")));
    const busy = answers.filter((a) => a.status === 503);
    const checked = answers.filter((a) => a.status === 401);
    expect(busy.length + checked.length).toBe(burst);
    expect(checked.length).toBeGreaterThanOrEqual(VERIFY_IN_FLIGHT);
    expect(checked.length).toBeLessThanOrEqual(VERIFY_IN_FLIGHT + VERIFY_QUEUE + 10);
    expect(busy.length).toBeGreaterThanOrEqual(20);
    for (const b of busy) {
      expect(b.json()).toMatchObject({ success: false, code: "service_unavailable" });
      expect(b.headers["retry-after"]).toBe("2");
    }
    // a log-in after the burst is checked normally
    expect((await restLogin(srv, "127.0.0.1", ADMIN.email, ADMIN.password)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 120_000);
});
