/**
 * Audit M-1: a gateway whose SECRET_KEY differs from the deployment's (SECRET_KEY unset, its own DATA_DIR, as on a
 * second machine following README "any number of processes on any machines") starts, reports /api/v1/health 200
 * ready, and then answers every log-in and bearer call 500 internal_error (SealError opening the JWT signing key)
 * and every agent key 401. It must refuse to start instead, naming SECRET_KEY.
 * Run: cp into test/distributed/ and `bun test/run.ts test/distributed/distributed-secret-key-mismatch.test.ts`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";
let dep: Deployment | undefined;

beforeAll(async () => {
  await startDeployment({ prefix: "acs-dist-kek-", nats: "single", users: [{ email: EMAIL, password: PASSWORD, role: "operator" }], env: { METRICS_PORT: "0" } }, (d) => (dep = d));
}, 90_000);
afterAll(async () => {
  await dep?.stop();
});

test("a gateway whose key-encryption key cannot open the deployment's signing key refuses to start, naming SECRET_KEY", async () => {
  const gw1 = dep!.gateways[0]!;
  const login = await json(gw1 + "/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(login.status).toBe(200); // the JWT signing key now exists, sealed with the deployment's SECRET_KEY
  let started: string | undefined;
  let refused = "";
  try {
    const p = await dep!.spawnRole("gateway", { SECRET_KEY: undefined, DATA_DIR: join(dep!.dir, "other-machine") });
    started = p.url;
  } catch (err) {
    refused = String(err);
  }
  if (started) {
    // what an operator sees today: healthy, yet no caller can authenticate
    const health = await json(started + "/api/v1/health");
    const login2 = await json(started + "/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect({ health: health.status, login: login2.status, code: login2.body?.code }).toEqual({ health: 503, login: 503, code: "service_unavailable" });
  }
  expect(refused).toContain("SECRET_KEY");
}, 90_000);
