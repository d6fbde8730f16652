/**
 * Auditor D: the money paths beyond the checkout capture under kill -9. A burst of refund requests and approvals,
 * merchant cancels of paid orders (refund of what is left), merchant status moves and new checkouts (coupons, two
 * stores, tracked stock, declines and lost answers) runs against a service in its own process; the process is
 * SIGKILLed in the middle; a new process on the same database gets the clients' retries (same idempotency keys, same
 * refund ids) and runs the re-drive reminders; then the money must add up (test/helpers/money-chaos.ts invariants).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { call, CHAOS_SERVICE_CONFIG, invariants, retryAll, setUpAndBurst } from "../helpers/money-chaos.ts";
import { startServiceProcess } from "../helpers/service-process.ts";

setDefaultTimeout(600_000);
const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? 2);

let db: TestDatabase;
let dataDir: string;
let proc: ReturnType<typeof Bun.spawn> | undefined;
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

async function start(): Promise<string> {
  const started = await startServiceProcess({ databaseUrl: db.url, dataDir, config: CHAOS_SERVICE_CONFIG });
  proc = started.proc;
  return started.url;
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded, as the service finds it after any restart
  dataDir = await mkdtemp(join(tmpdir(), "d-chaos-"));
});
afterAll(async () => {
  proc?.kill("SIGKILL");
  receiver.stop(true);
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

test("kill -9 during refunds, merchant cancels and moves, and checkouts: after restart and retries the money adds up", async () => {
  let url = await start();
  const login = async (u: string) => (await call(u, "/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token as string;
  let token = await login(url);
  const keyRes = await call(url, "/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "chaos", scopes: ["cart", "checkout", "orders:read"] } });
  expect(keyRes.status).toBe(201);
  const agent = { "x-agent-api-key": keyRes.body.data.key as string };
  const merchant = () => ({ authorization: `Bearer ${token}` });
  const reg = await call(url, "/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: merchant(),
    body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created", "order.status_changed", "checkout.abandoned"] },
  });
  expect(reg.status).toBe(201);

  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const burst = await setUpAndBurst([url], agent, merchant);
    const delay = 20 + Math.floor(Math.random() * Number(process.env.CHAOS_MAX_DELAY_MS ?? 400));
    await Bun.sleep(delay);
    proc!.kill("SIGKILL");
    await proc!.exited;
    const answered = await Promise.all(burst.ops);
    const seen = new Map<string, number>();
    for (const a of answered as ({ status: number } | null)[]) seen.set(String(a?.status ?? "lost"), (seen.get(String(a?.status ?? "lost")) ?? 0) + 1);
    console.log(`[chaos] round ${round}: burst answers before the kill ${JSON.stringify(Object.fromEntries(seen))}`);

    url = await start();
    token = await login(url);
    if (!process.env.CHAOS_NO_RETRY) await retryAll([url], burst, agent, merchant);
    // the re-drive reminders (first at 30 s), the reconcile reminders and the webhook leases (40 s) run
    let problems: string[] = [];
    const until = Date.now() + 120_000;
    do {
      await Bun.sleep(5_000);
      problems = await invariants(db.sql, received);
    } while (problems.length > 0 && Date.now() < until);
    console.log(`[chaos] round ${round}: killed after ${delay} ms; ${problems.length} problems`);
    if (problems.length) failures.push(`round ${round} (killed after ${delay} ms): ${problems.join("; ")}`);
  }
  expect(failures).toEqual([]);
});
