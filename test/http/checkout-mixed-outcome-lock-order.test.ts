/**
 * Review RV-1: a two-store turn settles its legs one after another in store-slug order (docs/checkout.md "Lock
 * order"), whatever each leg's outcome. Sorting the legs but sending their statements together on the turn's one
 * connection was not enough: a captured leg reads its order FOR UPDATE before its settle, so it locked its products a
 * round trip after a declined leg's release. [demo captured, greenleaf declined] then locked greenleaf before demo, the
 * mirrored session demo before greenleaf: 40P01 deadlocks, 503s and 500s, and captures whose orders stayed pending
 * (90 concurrent: 66–72 deadlocks, 74–80 captures, 12–22 orders paid). The resume of an approval the buyer gave one
 * store and refused the other settles the same mixed outcome in one turn.
 */
import { expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, LEAF, TRACKED_BOARD, ledger, twoStoreSession, type Attempt, type Res } from "../helpers/two-store-session.ts";
import { decideIntent } from "../helpers/sandbox-approval.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

const deadlocks = async (): Promise<number> =>
  (await srv.db.sql<{ n: number }[]>`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n;

/** A buyer whose payment to `approved` is captured and to `other` is not; odd and even buyers mirror each other. */
interface Buyer {
  a: Attempt;
  approved: string;
  other: string;
}

/** `n` demo-store + greenleaf-living sessions (odd buyers: demo-store approved; even: greenleaf-living). */
function mirroredBuyers(n: number, ready: (b: Buyer) => Promise<void> = async () => {}): Promise<Buyer[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const a = await twoStoreSession(srv, await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES }));
      const b = { a, approved: i % 2 ? DEMO : LEAF, other: i % 2 ? LEAF : DEMO };
      await ready(b);
      return b;
    }),
  );
}

/**
 * Every buyer answered `402 <code>` naming the approved store paid; every capture the processor made is a paid
 * order, the other store's order waits with nothing captured (`ledgers`: each store's processor intents).
 */
async function expectApprovedStorePaid(buyers: Buyer[], answers: Res[], code: string, ledgers: Record<"approved" | "other", { token: string; state: string }>): Promise<void> {
  expect(answers.map((r) => `${r.status} ${r.body.code}`)).toEqual(buyers.map(() => `402 ${code}`));
  expect(answers.map((r) => r.body.details.captured_merchant_slugs)).toEqual(buyers.map((b) => [b.approved]));
  for (const b of buyers) {
    expect(await ledger(srv, b.a, b.approved)).toEqual([ledgers.approved]);
    expect(await ledger(srv, b.a, b.other)).toEqual([ledgers.other]);
    const rows = await srv.db.sql<{ store_slug: string; status: string }[]>`SELECT store_slug, status FROM orders WHERE cart_id = ${b.a.cartId}`;
    expect(Object.fromEntries(rows.map((o) => [o.store_slug, o.status]))).toEqual({ [b.approved]: "paid", [b.other]: "pending" });
  }
}

/** Ample stock of both products, none held; returns the deadlocks counted so far. */
async function restock(): Promise<number> {
  await srv.db.sql`UPDATE products SET stock_quantity = 100000, reserved_quantity = 0, in_stock = true WHERE id IN (${TRACKED_BOARD}, ${GREEN})`;
  return deadlocks();
}

/** Nothing left held of either product, and no deadlock since `before`. */
async function expectNothingHeldNoDeadlock(before: number): Promise<void> {
  const [held] = await srv.db.sql<{ board: number; green: number }[]>`SELECT
    (SELECT reserved_quantity::int FROM products WHERE id = ${TRACKED_BOARD}) AS board, (SELECT reserved_quantity::int FROM products WHERE id = ${GREEN}) AS green`;
  expect(held).toEqual({ board: 0, green: 0 });
  // Backends report their deadlocks to the statistics within a second of their transaction.
  await Bun.sleep(1_500);
  expect((await deadlocks()) - before).toBe(0);
}

test("concurrent two-store checkouts, each with one store's payment captured and the other's declined in mirrored pairs, all answer 402 with the captured store paid, without a deadlock", async () => {
  const before = await restock();
  for (let round = 0; round < 2; round++) {
    const buyers = await mirroredBuyers(30);
    const answers = await Promise.all(buyers.map((b) => b.a.pay({ [b.approved]: "tok_approve", [b.other]: "tok_decline" })));
    await expectApprovedStorePaid(buyers, answers, "PAYMENT_DECLINED", { approved: { token: "tok_approve", state: "captured" }, other: { token: "tok_decline", state: "declined" } });
  }
  await expectNothingHeldNoDeadlock(before);
}, 180_000);

test("concurrent resumes of two-store checkouts where the buyer approved one store's payment and refused the other's, in mirrored pairs, all answer 402 with the approved store paid, without a deadlock", async () => {
  const before = await restock();
  const both = { [DEMO]: "tok_needs_approval", [LEAF]: "tok_needs_approval" };
  const buyers = await mirroredBuyers(30, async ({ a, approved, other }) => {
    expect((await a.pay(both)).status).toBe(202);
    const answer = (store: string, what: "approve" | "reject") => decideIntent(srv, deriveIntentId(a.sid, a.ik, store, 1), what);
    expect((await answer(approved, "approve")).status).toBe(200);
    expect((await answer(other, "reject")).status).toBe(200);
  });
  const answers = await Promise.all(buyers.map((b) => b.a.pay(both)));
  await expectApprovedStorePaid(buyers, answers, "PAYMENT_NOT_APPROVED", {
    approved: { token: "tok_needs_approval", state: "captured" },
    other: { token: "tok_needs_approval", state: "rejected" },
  });
  await expectNothingHeldNoDeadlock(before);
}, 180_000);
