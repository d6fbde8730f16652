/**
 * Review R4-5 on MCP: complete_checkout's payment_mandate binds the total the cart charges, not the cart the tool
 * read just before. The tool reads the cart (verifyMandateFor) and then sends `complete`; a re-preview with a dearer
 * shipping option landing between the two used to be charged. The test makes it land there: once the human has
 * approved, it locks the products table, so the tool's cart read waits inside the cart actor; the agent's re-preview
 * queues behind that read in the actor's mailbox, ahead of `complete`, and the lock is released.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { ReservedSql } from "postgres";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { DEST, SUMMIT, summitProduct } from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, errorOf, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let product: string;
let onPaymentApproved: (() => Promise<void>) | null = null;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, {
    path: `/${SUMMIT}/mcp`,
    headers: key.headers,
    elicit: async (req) => {
      if (onPaymentApproved && /^Pay /.test(req.message)) await onPaymentApproved();
      return { action: "accept", content: { approve: true } };
    },
  });
  product = await summitProduct(srv);
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

test("a dearer shipping option previewed between complete_checkout's mandate check and the payment is refused with MANDATE_LIMIT_EXCEEDED amount, nothing charged", async () => {
  const c = await post("/cart", { items: [{ product_id: product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const opts = (await post("/checkout/preview", { cartId, shipping: DEST })).body.details.options as { option_id: string; cost: number }[];
  const byCost = [...opts].sort((a, b) => a.cost - b.cost);
  const cheap = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[0]!.option_id } });
  expect(cheap.status).toBe(200);
  const sessionId = cheap.body.data.checkout_session_id as string;
  const cheapTotal = cheap.body.data.totals.total as number;
  const cheapMinor = cheap.body.data.totals.total_minor as number;

  const m = await agent.call("issue_payment_mandate", { max_amount: cheapTotal, currency: "USD" });
  expect(m.isError).toBeFalsy();
  const mandate = structured<{ payment_mandate: string }>(m).payment_mandate;

  let lock: ReservedSql | null = null;
  let dear: Promise<{ status: number; body: any }> | null = null;
  onPaymentApproved = async () => {
    onPaymentApproved = null;
    lock = await srv.db.sql.reserve();
    await lock`BEGIN`;
    await lock`LOCK TABLE products IN ACCESS EXCLUSIVE MODE`;
    // release once the tool's cart read waits on the lock and the re-preview is queued behind it
    void (async () => {
      for (let i = 0; i < 2_000; i++) {
        const [w] = await srv.db.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query ILIKE '%products%'`;
        if (w!.n > 0) break;
        await Bun.sleep(10);
      }
      dear = post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[byCost.length - 1]!.option_id } });
      await Bun.sleep(300);
      await lock!`ROLLBACK`;
      lock!.release();
    })();
  };
  const r = await agent.call("complete_checkout", {
    checkout_session_id: sessionId,
    idempotency_key: crypto.randomUUID(),
    payment_method: "tok_approve",
    payment_mandate: mandate,
  });
  expect(dear).not.toBeNull();
  const repriced = await dear!;
  expect(repriced.status).toBe(200);
  expect(repriced.body.data.totals.total_minor).toBeGreaterThan(cheapMinor);
  const e = errorOf(r);
  expect(e.code).toBe("MANDATE_LIMIT_EXCEEDED");
  expect(e.details.violated).toBe("amount");
  expect(e.details.mandate.max_amount_minor).toBe(cheapMinor);
  expect(e.details.cart_total_minor).toBe(repriced.body.data.totals.total_minor);
  const paid = await srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;
  expect(paid.length).toBe(0);
}, 60_000);
