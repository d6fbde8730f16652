/**
 * The dashboard's Connected apps page (audit X-1): the signed-in user sees the grants they gave MCP clients and the
 * OAuth clients they registered, revokes a grant and deletes a client through CSRF-checked forms, each effective at
 * once; another user's grant or client is the 404 page and stays in service.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { clientCredentials, codeFlowTokens, registerMachineClient, registerPublicClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "../mcp/helpers.ts";

const CALLBACK = "http://127.0.0.1:50597/cb";
const STORE = "greenleaf-living";
const OTHER = "cozy-paws-supply";

let srv: TestServer;
let mine: DashboardSession;
let theirs: DashboardSession;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  mine = await dashboardSession(srv, STORE);
  theirs = await dashboardSession(srv, OTHER);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const use = (token: string) =>
  rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${token}` });

/** A public code-flow client named `name` that `who` authorizes on the consent page: its access token. */
async function authorizedApp(name: string, who: { email: string; password: string }): Promise<{ clientId: string; access: string }> {
  const clientId = await registerPublicClient(srv, { name, redirectUri: CALLBACK, grantTypes: ["authorization_code", "refresh_token"], scope: "search cart" });
  const t = await codeFlowTokens(srv, { clientId, redirectUri: CALLBACK, scope: "search cart", verifier: "d".repeat(43) }, who);
  return { clientId, access: t.access };
}

const page = (s: DashboardSession) => srv.fetch("/dashboard/connected-apps", { headers: { cookie: s.cookie } });
const post = (s: DashboardSession, path: string, csrf = s.csrf) =>
  srv.fetch(path, { method: "POST", redirect: "manual", headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ _csrf: csrf }).toString() });

/** The grant id of the app named `name` on the page's revoke forms. */
async function grantIdOf(s: DashboardSession, name: string): Promise<string> {
  const rows = (await (await page(s)).text()).split("<tr>").filter((row) => row.includes(`aria-label="Revoke ${name}"`));
  expect(rows.length).toBe(1);
  return /action="\/dashboard\/connected-apps\/grants\/([0-9a-f-]{36})\/revoke"/.exec(rows[0]!)![1]!;
}

describe("the Connected apps page", () => {
  test("lists the apps the user authorized and the clients they registered; the header links to it", async () => {
    await authorizedApp("Listed app", merchantLogin(STORE));
    const session = await login(srv, merchantLogin(STORE));
    const client = await registerMachineClient(srv, session, { name: "Listed m2m", scope: "search" });
    const r = await page(mine);
    expect(r.status).toBe(200);
    const html = await r.text();
    expect(html).toContain("Listed app");
    expect(html).toContain("Listed m2m");
    expect(html).toContain(client.clientId);
    expect(html).not.toContain(client.secret);
    expect(html).toContain('href="/dashboard/connected-apps"');
    // another user sees neither
    const other = await (await page(theirs)).text();
    expect(other).not.toContain("Listed app");
    expect(other).not.toContain("Listed m2m");
  }, 60_000);

  test("a logged-out visitor is sent to the log-in page", async () => {
    const r = await srv.fetch("/dashboard/connected-apps", { redirect: "manual" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/dashboard/login?next=%2Fdashboard%2Fconnected-apps");
  });

  test("the user revokes an app: its access token is refused at once; without the CSRF token or as another user nothing happens", async () => {
    const app = await authorizedApp("Revoked app", merchantLogin(STORE));
    const id = await grantIdOf(mine, "Revoked app");
    const path = `/dashboard/connected-apps/grants/${id}/revoke`;

    expect((await post(mine, path, "not-the-token")).status).toBe(403);
    expect((await post(mine, "/dashboard/connected-apps/grants/not-a-uuid/revoke")).status).toBe(404);
    expect((await post(mine, `/dashboard/connected-apps/grants/${crypto.randomUUID()}/revoke`)).status).toBe(404);
    const foreign = await post(theirs, path);
    expect(foreign.status).toBe(404);
    expect((await use(app.access)).status).toBe(200);

    const r = await post(mine, path);
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/dashboard/connected-apps");
    expect((await use(app.access)).status).toBe(401);
    const after = await (await page(mine)).text();
    expect(after).toContain("Access revoked");
    expect(after).not.toContain("Revoke Revoked app");
  }, 60_000);

  test("the user deletes a client they registered: its secret is refused at once; another user's attempt is the 404 page", async () => {
    const session = await login(srv, merchantLogin(STORE));
    const client = await registerMachineClient(srv, session, { name: "Deleted m2m", scope: "search" });
    const mint = () => clientCredentials(srv, client);
    const path = `/dashboard/connected-apps/clients/${client.clientId}/delete`;

    expect((await post(theirs, path)).status).toBe(404);
    expect((await mint()).status).toBe(200);
    const r = await post(mine, path);
    expect(r.status).toBe(303);
    const refused = await mint();
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe("invalid_client");
    expect(await (await page(mine)).text()).not.toContain(client.clientId);
  }, 60_000);
});
