/**
 * The log-in form's double-submit nonce and several tabs (audit X-F3). Every GET /dashboard/login minted a new nonce
 * and overwrote the cookie, so only the newest tab's token matched: when a session ended, every open dashboard tab
 * landed on the log-in page, and logging in from any but the last one was a 403 "Form expired". The page now reuses
 * the browser's nonce when the cookie holds one of ours, and mints one only otherwise.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { LOGIN_COOKIE } from "../../gateway/dashboard/session.ts";
import { ADMIN } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

/** Opens the log-in page (sending `cookie` when given): the nonce cookie it sets (name=value) and the form's token. */
async function openLogin(cookie?: string) {
  const r = await srv.fetch("/dashboard/login?next=/dashboard", cookie ? { headers: { cookie } } : {});
  expect(r.status).toBe(200);
  const setCookie = r.headers.get("set-cookie") ?? "";
  const token = /name="_csrf" value="([^"]+)"/.exec(await r.text())![1]!;
  return { cookie: setCookie.split(";")[0]!, setCookie, token };
}

const logIn = (cookie: string, token: string) =>
  srv.fetch("/dashboard/login", {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, email: ADMIN.email, password: ADMIN.password, next: "/dashboard" }),
  });

test("a log-in page opened in a second tab leaves the first tab's form valid: both share the browser's nonce", async () => {
  const tab1 = await openLogin();
  const tab2 = await openLogin(tab1.cookie);
  expect(tab2.cookie).toBe(tab1.cookie);
  expect(tab2.setCookie).toContain("Max-Age=1800"); // refreshed
  expect(tab2.token).toBe(tab1.token);
  const r = await logIn(tab2.cookie, tab1.token);
  expect(r.status).toBe(303);
  expect(r.headers.get("location")).toBe("/dashboard");
});

test("a cookie that is not one of our nonces is replaced, and a token of another nonce is still refused", async () => {
  const forged = await openLogin(`${LOGIN_COOKIE}=attacker-chosen`);
  expect(forged.cookie).not.toBe(`${LOGIN_COOKIE}=attacker-chosen`);
  expect(forged.cookie).toMatch(new RegExp(`^${LOGIN_COOKIE}=[A-Za-z0-9_-]{43}$`));
  const other = await openLogin();
  const refused = await logIn(forged.cookie, other.token);
  expect(refused.status).toBe(403);
  expect(await refused.text()).toContain("Form expired");
  const ok = await logIn(forged.cookie, forged.token);
  expect(ok.status).toBe(303);
});
