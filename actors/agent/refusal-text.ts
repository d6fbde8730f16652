/**
 * The way on of the tier refusals, one text for REST (actors/agent/access.ts) and MCP (gateway/mcp/dispatch.ts):
 * a refusal names what the caller can do about it, as CART_NOT_MUTABLE and ORDER_NOT_CANCELLABLE do (review AD-9).
 * Keys are minted by their account (POST /api/v1/agent-keys, `tier`) up to the account's plan, which an operator
 * raises (gateway/rest/agent-keys.ts, admin-users.ts).
 */

/** After "the STARTER tier does not include negotiate": which key would. */
export function featureTierNextStep(requiredTier: string): string {
  return (
    `Use a key of tier ${requiredTier} or higher: the account mints one with POST /api/v1/agent-keys {"tier":"${requiredTier}"}, ` +
    "up to the account's plan (403 tier_not_in_plan above it; an operator can raise the plan)."
  );
}

/** After "the SANDBOX key of an account on the STARTER plan does not include X": the plan is the limit. */
export function planFeatureNextStep(requiredTier: string): string {
  return `The account's plan caps what its keys can do: an operator can raise the plan to ${requiredTier} or higher; the account then mints a key of that tier (POST /api/v1/agent-keys).`;
}

/** After "SANDBOX keys cannot call …": SANDBOX keys evaluate read-only; buying needs a paid-tier key. */
export const SANDBOX_NEXT_STEP =
  "SANDBOX keys evaluate discovery only; carts, coupons, negotiation, checkout, orders and wallets need a STARTER key or higher: " +
  'the account mints one with POST /api/v1/agent-keys {"tier":"STARTER","scopes":["search","cart","checkout"]}. The sandbox test ' +
  "payment tokens (tok_approve, tok_decline, …) work with any such key.";
