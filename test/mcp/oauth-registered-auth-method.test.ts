/**
 * The token endpoint authenticates a confidential client only with the method it registered (OAuth 2.1 §2.4; audit
 * a client registered for client_secret_basic that sends its secret in the body, or one registered for
 * client_secret_post that sends it in the Basic header, is refused 401 invalid_client. So the agent trust signal a
 * client_credentials token carries (`agent_trust.client_auth`, signed for merchants) states the method actually used.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { basicAuth, registerMachineClient, tokenRequest } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let session: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  session = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function register(method: "client_secret_basic" | "client_secret_post"): Promise<{ id: string; secret: string }> {
  const c = await registerMachineClient(srv, session, { name: "m2m", method, scope: "search cart checkout" });
  return { id: c.clientId, secret: c.secret };
}

/** A client_credentials request with the secret sent as `how`. */
function mint(c: { id: string; secret: string }, how: "client_secret_basic" | "client_secret_post") {
  const fields: Record<string, string> = { grant_type: "client_credentials", resource: `${srv.url}/demo-store/mcp` };
  if (how === "client_secret_post") Object.assign(fields, { client_id: c.id, client_secret: c.secret });
  return tokenRequest(srv, fields, how === "client_secret_basic" ? basicAuth(c.id, c.secret) : undefined);
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8"));

describe("the registered client authentication method", () => {
  test("a client registered for client_secret_basic that sends its secret in the body is refused 401 invalid_client", async () => {
    const c = await register("client_secret_basic");
    const r = await mint(c, "client_secret_post");
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("invalid_client");
    expect(r.body.error_description).toContain("registered for client_secret_basic");
    // its registered method works, and the signal says it
    const ok = await mint(c, "client_secret_basic");
    expect(ok.status).toBe(200);
    expect(claimsOf(ok.body.access_token).agent_trust).toEqual({ v: 1, client_auth: "client_secret_basic", accountable_owner: true });
  }, 60_000);

  test("a client registered for client_secret_post that sends its secret in the Basic header is refused 401 invalid_client", async () => {
    const c = await register("client_secret_post");
    const r = await mint(c, "client_secret_basic");
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("invalid_client");
    expect(r.headers.get("www-authenticate")).toBe('Basic realm="oauth"');
    const ok = await mint(c, "client_secret_post");
    expect(ok.status).toBe(200);
    expect(claimsOf(ok.body.access_token).agent_trust.client_auth).toBe("client_secret_post");
  }, 60_000);

  test("a wrong secret sent by the other method gets the plain refusal, naming no registered method", async () => {
    const c = await register("client_secret_basic");
    const r = await mint({ id: c.id, secret: "mcps_wrong" }, "client_secret_post");
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("invalid_client");
    expect(r.body.error_description).toBe("unknown client or bad credentials");
  }, 60_000);
});
