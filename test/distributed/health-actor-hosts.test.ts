/**
 * A gateway process's health report says whether actor hosts are there (audit U LOW-5): with no live host every
 * actor call is 503 while the database is fine, so the status (the database's, as the spec says) stays "ok" and
 * `subsystems.actors` / `ready` turn false. One `bun gateway/main.ts actors` and one `… gateway` over a 1-node NATS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDeployment, type Deployment } from "../helpers/deployment.ts";

let dep: Deployment | undefined;

const spawnRole = (role: "actors" | "gateway") => dep!.spawnRole(role);

async function health(gateway: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gateway}/api/v1/health`);
  return { status: res.status, body: await res.json() };
}

/** Polls until `ok` holds (the report is cached for a second; a host that leaves is gone from the view at once). */
async function eventually(gateway: string, ok: (b: any) => boolean, ms = 10_000): Promise<{ status: number; body: any }> {
  const until = Date.now() + ms;
  let last = await health(gateway);
  while (!ok(last.body) && Date.now() < until) {
    await Bun.sleep(250);
    last = await health(gateway);
  }
  return last;
}

beforeAll(async () => {
  await startDeployment(
    {
      prefix: "acs-dist-health-",
      nats: "single",
      actors: 0,
      gateways: 0,
      env: {
        METRICS_PORT: "0",
        ACTOR_PARTITIONS: "8",
        ACTOR_ASK_TIMEOUT_MS: "2000", // the login with no host answers 503 after 2 s of retries instead of 10 s
      },
    },
    (started) => (dep = started),
  );
}, 60_000);

afterAll(async () => {
  await dep?.stop();
});

describe("health on a gateway process", () => {
  test("reports the live actor hosts, and actors false with status ok once the only host has stopped", async () => {
    const host = await spawnRole("actors");
    const gw = (await spawnRole("gateway")).url!;

    const up = await eventually(gw, (b) => b.data?.subsystems?.actors === true);
    expect(up.status).toBe(200);
    expect(up.body.data.status).toBe("ok");
    expect(up.body.data.subsystems.actors).toBe(true);
    expect(up.body.data.ready).toBe(true);
    expect(up.body.data.actorHosts).toEqual({ transport: "nats", liveHosts: 1, unownedPartitions: {}, ready: true });

    host.proc.kill("SIGTERM");
    await host.proc.exited;
    const down = await eventually(gw, (b) => b.data?.subsystems?.actors === false);
    // the spec's rule: 200 and "ok" while the database answers
    expect(down.status).toBe(200);
    expect(down.body.data.status).toBe("ok");
    expect(down.body.data.subsystems).toMatchObject({ database: true, actors: false });
    expect(down.body.data.ready).toBe(false);
    expect(down.body.data.actorHosts.liveHosts).toBe(0);
    expect(down.body.data.actorHosts.ready).toBe(false);
    // every partition of every kind is unowned, counted against the service's kinds: it said {} (audit M-3)
    expect(down.body.data.actorHosts.unownedPartitions).toEqual({ agent: 8, cart: 8, ip: 8, store: 8, trust: 8, wallet: 8, webhook: 8 });
    // what the operator's alert is for: an actor call on that gateway fails
    const login = await fetch(`${gw}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "a@b.example", password: "x" }), signal: AbortSignal.timeout(20_000) });
    expect(login.status).toBe(503);
  }, 90_000);
});
