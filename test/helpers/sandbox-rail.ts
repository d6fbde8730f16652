/** The sandbox card processor driven directly (actor-level tests of its ledger): a capture to refund against. */
import { CardSandboxRail, SANDBOX_TOKENS } from "../../actors/payments/card-sandbox.ts";
import { deriveIntentId } from "../../actors/payments/rail.ts";

/** A 42.00 USD capture by `rail` for store `shop`, on the session's first attempt. */
export async function capturedOn(rail: CardSandboxRail, session: string) {
  const r = await rail.charge({
    intentId: deriveIntentId(session, "3b241101-e2bb-4255-8caf-4136c566a962", "shop", 1),
    storeId: "shop",
    amountMinor: 4_200,
    currency: "USD",
    paymentToken: SANDBOX_TOKENS.approve,
  });
  if (r.status !== "captured") throw new Error(`expected a capture, got ${r.status}`);
  return r;
}
