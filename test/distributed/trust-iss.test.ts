/**
 * The trust score JWS's `iss` in the two-role deployment (review R4-1): the trust actor runs on the actor host, which
 * signed with its own default `http://HOST:PORT` (an address that serves nothing) when only the gateway had SITE_URL.
 * Now an actor host without SITE_URL (outside production, where it is refused) signs with no `iss`, and one with the
 * deployment's SITE_URL signs with it. One actor host at a time over a local NATS cluster, one gateway with SITE_URL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeJwt } from "jose";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops-iss@example.com";
const PASSWORD = "distributed-password";
const SITE = "http://shop-iss.test";
// fixed, non-zero actor host ports (F6's range): with PORT=0 the old default already named no issuer
const ACTORS_PORT = [55010, 55011];

let dep: Deployment | undefined;
let gw = "";
let token = "";

beforeAll(async () => {
  // no role yet: each test starts its own actor host with its own PORT and SITE_URL
  await startDeployment(
    {
      prefix: "acs-dist-iss-",
      seeded: true,
      actors: 0,
      gateways: 0,
      users: [{ email: EMAIL, password: PASSWORD, role: "operator" }],
      env: { SECRET_KEY: "ac".repeat(32), PORT: undefined, SITE_URL: "" },
    },
    (started) => (dep = started),
  );
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

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
    await dep!.spawnRole("actors", { PORT: String(ACTORS_PORT[0]) });
    const g = await dep!.spawnRole("gateway", { PORT: "0", SITE_URL: SITE });
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
    const first = dep!.procs[0]!;
    first.proc.kill("SIGTERM");
    await first.proc.exited;
    await dep!.spawnRole("actors", { PORT: String(ACTORS_PORT[1]), SITE_URL: SITE });
    expect((await signedClaims()).iss).toBe(SITE);
  }, 90_000);
});
