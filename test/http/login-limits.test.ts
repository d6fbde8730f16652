/**
 * Password log-in hardening (security audit C-2, C-3; review R2 J-1, J-3): every stored hash costs what the dummy
 * hash costs (so the response time does not tell which e-mails exist), old hashes are upgraded on a successful
 * log-in, the three password forms share one log-in bucket per address and per e-mail, a browser or address that
 * signed in before passes a full per-e-mail bucket (the owner keeps access while guessers get 429) within one more
 * bucket of that size per account (a copied cookie cannot multiply the guesses; the REST log-in ignores the cookie),
 * stale known addresses are swept, and concurrent verifications are bounded.
 *
 * One server for the whole file, with small log-in limits (2 per address, 3 per e-mail: configuration, the same
 * code path as production's 30 and 100, which test/unit/login-gate.test.ts pins) and the real argon2 parameters.
 * Requests that must come from distinct client addresses are sent from 127.0.x.y source addresses (node:http
 * `localAddress`), so each test has buckets of its own.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import type { Transport } from "../../actors/transport/transport.ts";
import { KNOWN_DEVICE_TTL_MS, sweepKnownAddresses } from "../../gateway/login-known.ts";
import type { Services } from "../../gateway/services.ts";
import { bootHooks } from "../../infra/boot-hooks.ts";
import { ARGON2_PARAMS, currentPhcParameters, passwordCheckLoad, phcParameters, usePasswordCost, VERIFY_IN_FLIGHT, VERIFY_QUEUE } from "../../infra/passwords.ts";
import { ADMIN, merchantLogin } from "../helpers/agents.ts";
import { useServer, type TestServer } from "../helpers/server.ts";

const PER_IP = 2;
const PER_EMAIL = 3;

const srv = useServer({ config: { LOGIN_LIMIT_PER_IP: PER_IP, LOGIN_LIMIT_PER_EMAIL: PER_EMAIL } });

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

/** The value of a cookie the answer sets ("" when it sets none). */
function setCookie(r: Answer, name: string): string {
  const line = (r.headers["set-cookie"] ?? []).find((c) => c.startsWith(`${name}=`));
  return line ? line.split(";")[0]!.slice(name.length + 1) : "";
}

/** The dashboard's log-in form as a browser submits it (its CSRF cookie and token first); `known`: the browser's known-device cookie. */
async function dashboardLogin(srv: TestServer, from: string, email: string, password: string, known = ""): Promise<Answer> {
  const page = await requestFrom(srv, from, "/dashboard/login");
  const csrfCookie = String(page.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
  const cookie = known ? `${csrfCookie}; acs_known_device=${known}` : csrfCookie;
  const token = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return requestFrom(srv, from, "/dashboard/login", {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, email, password, next: "/dashboard" }).toString(),
  });
}

/** The OAuth consent form, filled in and ready to submit with decision=allow, for a freshly registered public client. */
async function consentForm(srv: TestServer, from: string, email: string, password: string, known = ""): Promise<() => Promise<Answer>> {
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
  const csrfCookie = String(page.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
  const cookie = known ? `${csrfCookie}; acs_known_device=${known}` : csrfCookie;
  const form = new URLSearchParams();
  for (const m of page.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, "&"));
  form.set("email", email);
  form.set("password", password);
  form.set("decision", "allow");
  return () => requestFrom(srv, from, "/api/v1/oauth/authorize", { method: "POST", headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
}

const consentLogin = async (srv: TestServer, from: string, email: string, password: string, known = "") => (await consentForm(srv, from, email, password, known))();

/** A refusal by the log-in buckets with its headers (the answer's body is checked by the caller: JSON or HTML). */
function expectRefusalHeaders(r: Answer) {
  expect(r.status).toBe(429);
  expect(Number(r.headers["retry-after"])).toBeGreaterThan(0);
  expect(r.headers["x-ratelimit-remaining"]).toBe("0");
  expect(Number(r.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
}

function expectLoginRefused(r: Answer) {
  expectRefusalHeaders(r);
  expect(r.json()).toMatchObject({ success: false, code: "rate_limit_exceeded" });
}

/** The consent form's refusal: the consent page again, as HTML, with the reason (never a JSON body to a browser). */
function expectConsentRefused(r: Answer) {
  expectRefusalHeaders(r);
  expect(r.headers["content-type"]).toStartWith("text/html");
  expect(r.text).toContain("Too many log-in attempts");
  expect(r.text).toContain('name="csrf_token"');
}

/** Fills the account's per-e-mail bucket with wrong guesses from two addresses of 127.0.<net>.x (2 + 1). */
async function lockAccount(net: number, email: string): Promise<void> {
  for (let i = 0; i < PER_EMAIL; i++) {
    const r = await restLogin(srv, `127.0.${net}.${1 + Math.floor(i / PER_IP)}`, email, `guess-${i}`);
    expect(r.status).toBe(401);
  }
}

describe("password hashes", () => {
  test("every seeded account's hash has the PHC parameters of the dummy hash verified for unknown e-mails", async () => {
    const rows = await srv.db.sql<{ email: string; password_hash: string }[]>`SELECT email, password_hash FROM users`;
    expect(rows.length).toBeGreaterThan(1);
    const dummy = await currentPhcParameters();
    // the suite's cost (infra/passwords.ts TEST_ARGON2_PARAMS); the production cost is pinned in test/unit/login-gate.test.ts
    expect(dummy).toBe("argon2id$v=19$m=1024,t=1,p=1");
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
  test("successful log-ins do not use up the bucket", async () => {
    for (let i = 0; i < PER_IP + 2; i++) {
      const r = await restLogin(srv, "127.0.0.3", ADMIN.email, ADMIN.password);
      expect(r.status).toBe(200);
    }
  });

  test("after the address's failed attempts are used up, the REST log-in, the consent form and the dashboard all answer 429", async () => {
    const from = "127.0.0.4";
    for (let i = 0; i < PER_IP; i++) {
      const r = await restLogin(srv, from, `nobody${i}@example.com`, "wrong-password");
      expect(r.status).toBe(401);
      expect(r.headers["x-ratelimit-limit"]).toBe(String(PER_IP));
      expect(r.headers["x-ratelimit-remaining"]).toBe(String(PER_IP - 1 - i));
    }
    // the right password is refused as well now: the bucket is checked before any hash
    expectLoginRefused(await restLogin(srv, from, ADMIN.email, ADMIN.password));
    expectConsentRefused(await consentLogin(srv, from, ADMIN.email, ADMIN.password));
    const dash = await dashboardLogin(srv, from, ADMIN.email, ADMIN.password);
    expectRefusalHeaders(dash);
    expect(dash.headers["content-type"]).toStartWith("text/html");
    // another address is not affected
    expect((await restLogin(srv, "127.0.0.5", ADMIN.email, ADMIN.password)).status).toBe(200);
  });

  test("failed attempts through the consent form and the dashboard count in the same bucket as the REST log-in", async () => {
    const from = "127.0.0.6";
    // one e-mail for all three, below its own bucket's limit: the refusal is the address's
    const email = "shared-bucket@example.com";
    expect((await consentLogin(srv, from, email, "wrong-password")).status).toBe(401);
    expect((await dashboardLogin(srv, from, email, "wrong-password")).status).toBe(401);
    expectLoginRefused(await restLogin(srv, from, email, "wrong-password"));
  });

});

describe("an account under a guessing attack", () => {
  const owner = merchantLogin("greenleaf-living");
  /** The known-device cookies of the owner's browser and of the admin's. */
  let ownerBrowser = "";
  let adminBrowser = "";

  beforeAll(async () => {
    // before the attack: a REST log-in from the owner's address, dashboard log-ins in the owner's and the admin's browsers
    expect((await restLogin(srv, "127.0.2.1", owner.email, owner.password)).status).toBe(200);
    const dash = await dashboardLogin(srv, "127.0.2.2", owner.email, owner.password);
    expect(dash.status).toBe(303);
    expect(setCookie(dash, "acs_dash")).not.toBe("");
    ownerBrowser = setCookie(dash, "acs_known_device");
    adminBrowser = setCookie(await dashboardLogin(srv, "127.0.2.6", ADMIN.email, ADMIN.password), "acs_known_device");
    expect(ownerBrowser).not.toBe("");
    expect(adminBrowser).not.toBe("");
    await lockAccount(1, owner.email);
  });

  test("takes a bounded number of failed attempts from however many addresses: then guessers get 429, and so does its owner from a new address and browser", async () => {
    // a new address, and one that guessed before and still has room in its own bucket
    expectLoginRefused(await restLogin(srv, "127.0.1.9", owner.email, "guess-x"));
    expectLoginRefused(await restLogin(srv, "127.0.1.2", owner.email, "guess-y"));
    // a forged known-device cookie, and a real one of another account
    expectRefusalHeaders(await dashboardLogin(srv, "127.0.1.9", owner.email, "guess-z", `${Math.floor(Date.now() / 1000)}.${"A".repeat(22)}`));
    expectRefusalHeaders(await dashboardLogin(srv, "127.0.1.9", owner.email, "guess-w", adminBrowser));
    // the owner's right password from a new address in a browser that never signed in (the residual, docs/access.md)
    expectLoginRefused(await restLogin(srv, "127.0.2.8", owner.email, owner.password));
    // the same fresh address may still try another account
    expect((await restLogin(srv, "127.0.1.9", "someone-else@example.com", "wrong-password")).status).toBe(401);
  });

  test("its owner still signs in from an address or a browser that signed in before, within that address's own bucket", async () => {
    // REST from the known address; the dashboard and the consent form in the known browser, from new addresses
    expect((await restLogin(srv, "127.0.2.1", owner.email, owner.password)).status).toBe(200);
    const again = await dashboardLogin(srv, "127.0.2.3", owner.email, owner.password, ownerBrowser);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe("/dashboard");
    const consent = await consentLogin(srv, "127.0.2.4", owner.email, owner.password, ownerBrowser);
    expect(consent.status).toBe(302);
    expect(new URL(consent.headers.location!).searchParams.get("code")).toStartWith("ac_");
    // guesses from a known address are bounded by its own bucket
    for (let i = 0; i < PER_IP; i++) expect((await restLogin(srv, "127.0.2.1", owner.email, `typo-${i}`)).status).toBe(401);
    expectLoginRefused(await restLogin(srv, "127.0.2.1", owner.email, owner.password));
  });
});

describe("known devices cannot multiply an account's guesses (review R5-2)", () => {
  const owner = merchantLogin("maple-pine-home");
  /** The owner's browser's known-device cookie, as anyone who later uses that (shared) browser can copy it. */
  let copied = "";

  beforeAll(async () => {
    const dash = await dashboardLogin(srv, "127.0.9.1", owner.email, owner.password);
    expect(dash.status).toBe(303);
    copied = setCookie(dash, "acs_known_device");
    expect(copied).not.toBe("");
    await lockAccount(10, owner.email);
  });

  test("the REST log-in ignores a known-device cookie: only the browser forms set it", async () => {
    const r = await requestFrom(srv, "127.0.11.1", "/api/v1/auth/login", {
      method: "POST",
      headers: { "content-type": "application/json", cookie: `acs_known_device=${copied}` },
      body: JSON.stringify({ email: owner.email, password: "guess-rest" }),
    });
    expectLoginRefused(r);
  });

  test("a copied cookie used from many addresses gets one more per-e-mail allowance of guesses in total, not one per address", async () => {
    let checked = 0;
    for (let a = 1; a <= 10; a++) {
      for (let i = 0; i < PER_IP; i++) {
        const r = await dashboardLogin(srv, `127.0.12.${a}`, owner.email, `guess-${a}-${i}`, copied);
        if (r.status === 401) checked++;
        else expectRefusalHeaders(r);
      }
    }
    // 10 addresses x 2 each would be 20 guesses if only the addresses' buckets bounded a known device
    expect(checked).toBe(PER_EMAIL);
    // the account's known-device bucket is full now: the cookie, and the owner with it, wait like everyone else
    // (the residual of a copied cookie, docs/access.md)
    expectRefusalHeaders(await dashboardLogin(srv, "127.0.12.11", owner.email, owner.password, copied));
  });
});

describe("the sweep of known log-in addresses (review R5-3)", () => {
  test("deletes the addresses no success has vouched for in 30 days, of every account, and keeps the others", async () => {
    const now = Date.now();
    const day = 24 * 60 * 60 * 1000;
    const rows = [
      { email_digest: "sweep-dormant", address_digest: "a1", last_success_at: new Date(now - 31 * day) },
      { email_digest: "sweep-dormant", address_digest: "a2", last_success_at: new Date(now - KNOWN_DEVICE_TTL_MS) },
      { email_digest: "sweep-active", address_digest: "a3", last_success_at: new Date(now - 29 * day) },
      { email_digest: "sweep-active", address_digest: "a4", last_success_at: new Date(now - 40 * day) },
    ];
    await srv.db.sql`INSERT INTO login_known_addresses ${srv.db.sql(rows)}`;
    expect(await sweepKnownAddresses(srv.db.sql, now)).toBeGreaterThanOrEqual(3);
    const left = await srv.db.sql<{ address_digest: string }[]>`
      SELECT address_digest FROM login_known_addresses WHERE email_digest LIKE 'sweep-%' ORDER BY address_digest`;
    expect(left.map((r) => r.address_digest)).toEqual(["a3"]);
    // a real account's fresh address (signed in above) is kept
    const fresh = await srv.db.sql`SELECT 1 FROM login_known_addresses WHERE last_success_at > ${new Date(now - day)}`;
    expect(fresh.length).toBeGreaterThan(0);
  });

  test("runs from a boot hook of the processes that serve log-ins, at once and then periodically", async () => {
    const hook = bootHooks.find((h) => h.name === "login-known-addresses-sweep")!;
    expect(hook.roles).toEqual(["start", "gateway"]);
    const stale = new Date(Date.now() - 31 * 24 * 60 * 60 * 1000);
    await srv.db.sql`INSERT INTO login_known_addresses (email_digest, address_digest, last_success_at) VALUES ('sweep-boot', 'b1', ${stale})`;
    const services = { sql: srv.db.sql, clock: { now: () => Date.now() }, log: { warn: () => {} } } as unknown as Services;
    const undo = await hook.run({ role: "gateway", services, transport: undefined as unknown as Transport });
    await undo!(); // waits for the sweep it started, and stops the timer
    expect(await srv.db.sql`SELECT 1 FROM login_known_addresses WHERE email_digest = 'sweep-boot'`).toHaveLength(0);
  });
});

describe("concurrent password checks", () => {
  test("a burst beyond the verification slots and queue is answered 503 service_unavailable with Retry-After at once, on the consent form as a page", async () => {
    // at the production cost: the unknown e-mails of the burst verify the dummy, made at it, so each check holds its
    // slot for a few hundred ms as in production (the suite's test cost of ~1 ms would empty the queue as it fills)
    const undo = usePasswordCost(ARGON2_PARAMS);
    try {
      await burstIsRefused();
    } finally {
      undo();
    }
  });

  async function burstIsRefused() {
    const burst = VERIFY_IN_FLIGHT + VERIFY_QUEUE + 30;
    // the consent form is filled in first, then submitted while the burst holds every slot
    const submitConsent = await consentForm(srv, "127.0.4.250", "burst-consent@example.com", "wrong-password");
    const started = Date.now();
    // each request from its own address and for its own e-mail, so no bucket refuses: only the gate stands in the way
    const pending = Promise.all(Array.from({ length: burst }, (_, i) => restLogin(srv, `127.0.4.${i + 1}`, `burst${i}@example.com`, "wrong-password")));
    // submitted once the burst holds every slot and fills the queue (a fixed 100 ms was too short on a loaded CI
    // machine: the consent form's check then found a slot and answered 401)
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(5)) {
      const load = passwordCheckLoad();
      if (load.running >= VERIFY_IN_FLIGHT && load.waiting >= VERIFY_QUEUE) break;
    }
    const consent = await submitConsent();
    const answers = await pending;
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
    expect(consent.status).toBe(503);
    expect(consent.headers["retry-after"]).toBe("2");
    expect(consent.headers["content-type"]).toStartWith("text/html");
    expect(consent.text).toContain("Too many log-ins are being checked right now");
    // a log-in after the burst is checked normally
    expect((await restLogin(srv, "127.0.4.251", ADMIN.email, ADMIN.password)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(60_000);
  }
});
