/**
 * Auditor D: the money paths in a deployment (two actor hosts, two gateways, a 3-node NATS cluster) when an actor
 * host is killed with SIGKILL in the middle of a burst of refund approvals, merchant cancels and moves, and checkouts
 * (test/helpers/money-chaos.ts). The other host takes the dead one's partitions over, a replacement host joins later
 * (placement moves actors again), the clients retry through the other gateway with the same keys and refund ids,
 * and the money must add up.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";
import { invariants, retryAll, setUpAndBurst } from "../helpers/money-chaos.ts";

setDefaultTimeout(900_000);
const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? 2);
let dep: Deployment | undefined;
const received = new Map<string, number>();
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) => {
    await req.text();
    const id = req.headers.get("x-webhook-id") ?? "?";
    received.set(id, (received.get(id) ?? 0) + 1);
    return new Response("ok");
  },
});

beforeAll(async () => {
  await startDeployment(
    { prefix: "d-dist-chaos-", seeded: true, actors: 2, gateways: 2, env: { RATE_LIMITS_ENABLED: "false", ALLOW_PRIVATE_URLS: "true" } },
    (started) => (dep = started),
  );
}, 180_000);
afterAll(async () => {
  receiver.stop(true);
  await dep?.stop();
});

test("an actor host killed mid-burst: after takeover, a new host and the clients' retries the money adds up", async () => {
  const d = dep!;
  const gws = d.gateways;
  const login = async () => (await json(`${gws[0]}/api/v1/auth/login`, { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token as string;
  const token = await login();
  const merchant = () => ({ authorization: `Bearer ${token}` });
  const keyRes = await json(`${gws[0]}/api/v1/agent-keys`, { method: "POST", headers: merchant(), body: { name: "chaos", scopes: ["cart", "checkout", "orders:read"] } });
  expect(keyRes.status).toBe(201);
  const agent = { "x-agent-api-key": keyRes.body.data.key as string };
  const reg = await json(`${gws[0]}/api/v1/merchant/stores/demo-store/webhooks`, {
    method: "POST",
    headers: merchant(),
    body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created", "order.status_changed", "checkout.abandoned"] },
  });
  expect(reg.status).toBe(201);

  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const burst = await setUpAndBurst(gws, agent, merchant);
    const delay = 20 + Math.floor(Math.random() * Number(process.env.CHAOS_MAX_DELAY_MS ?? 400));
    await Bun.sleep(delay);
    const victim = d.actors.shift()!;
    victim.proc.kill("SIGKILL");
    // odd rounds: a gateway dies too, with the answers of what it was asking
    const deadGateway = round % 2 === 1 ? d.gatewayProcs.shift() : undefined;
    deadGateway?.proc.kill("SIGKILL");
    await victim.proc.exited;
    await deadGateway?.proc.exited;
    const answered = await Promise.all(burst.ops);
    const seen = new Map<string, number>();
    for (const a of answered as ({ status: number } | null)[]) seen.set(String(a?.status ?? "lost"), (seen.get(String(a?.status ?? "lost")) ?? 0) + 1);
    console.log(`[chaos] round ${round}: burst answers before the kill ${JSON.stringify(Object.fromEntries(seen))}`);
    if (deadGateway) {
      const fresh = await d.spawnRole("gateway");
      d.gatewayProcs.push(fresh);
      gws.splice(gws.indexOf(deadGateway.url!), 1, fresh.url!);
    }
    // the other gateway retries at once (the survivor takes over within the TTL), then a replacement host joins
    await retryAll([...gws].reverse(), burst, agent, merchant);
    d.actors.push(await d.spawnRole("actors"));
    await retryAll(gws, burst, agent, merchant);
    let problems: string[] = [];
    const until = Date.now() + 150_000;
    do {
      await Bun.sleep(5_000);
      problems = await invariants(d.db.sql, received);
    } while (problems.length > 0 && Date.now() < until);
    console.log(`[dist-chaos] round ${round}: host killed after ${delay} ms; ${problems.length} problems`);
    if (problems.length) failures.push(`round ${round} (killed after ${delay} ms): ${problems.join("; ")}`);
  }
  expect(failures).toEqual([]);
});
