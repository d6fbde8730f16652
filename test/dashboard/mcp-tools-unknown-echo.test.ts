/**
 * Helper F (session 20): the MCP tools form quoted an unknown tool name back whole in its notice. A name with a NUL
 * byte made the notice itself unstorable (the session's notice is jsonb), so the merchant got the 400 error page
 * instead of the settings page with the notice; a 10,000-character name was quoted whole. The notice now quotes a
 * bounded preview (infra/echo.ts, as REST's 400s do).
 */
import { beforeAll, expect, test } from "bun:test";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const base = "/dashboard/s/greenleaf-living/settings";
let s: DashboardSession;

beforeAll(async () => {
  s = await dashboardSession(srv, "greenleaf-living");
}, 120_000);

async function pick(tool: string): Promise<{ status: number; notice: string | undefined }> {
  const r = await srv.fetch(`${base}/mcp-tools`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: s.csrf, mode: "some", tools: tool }).toString(),
  });
  if (r.status !== 303) return { status: r.status, notice: undefined };
  const page = await (await srv.fetch(base, { headers: { cookie: s.cookie } })).text();
  return { status: r.status, notice: /role="alert">([^<]*)</.exec(page)?.[1] };
}

test("an unknown tool name with a NUL byte is refused with a notice on the settings page, not the error page", async () => {
  const out = await pick("search\u0000x");
  expect(out.status).toBe(303);
  expect(out.notice).toStartWith("Unknown tool: ");
});

test("an unknown tool name of 10,000 characters is quoted cut, not whole", async () => {
  const out = await pick("x".repeat(10_000));
  expect(out.status).toBe(303);
  expect(out.notice).toStartWith("Unknown tool: ");
  expect(out.notice!.length).toBeLessThan(200);
});
