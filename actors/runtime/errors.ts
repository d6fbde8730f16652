/**
 * Errors as data. Every failure that crosses an actor boundary is an `ActorError` with a stable `code`.
 * One table (`ERROR_TABLE`) maps each code to its HTTP status (REST) and to the MCP tool-error fields
 * (remedy, retryable, scope), so the REST envelope and the MCP structured error never disagree.
 *
 * Codes come from the spec: the lowercase ones are the REST error table, the UPPER_CASE ones are the MCP tool
 * error table. Codes the spec leaves out but the service needs (validation_error, not_found, conflict, …) are
 * marked "ours" and documented in docs/errors.md.
 */

export type Remedy =
  | "stop"
  | "human_decides"
  | "fix_arguments"
  | "refresh_state"
  | "different_path"
  | "retry_same_call"
  | "retry_with_backoff";

export type ErrorScope = "call" | "merchant";

export interface ErrorSpec {
  readonly http: number;
  readonly remedy: Remedy;
  readonly retryable: boolean;
  readonly scope: ErrorScope;
  readonly description: string;
}

const e = (http: number, remedy: Remedy, retryable: boolean, scope: ErrorScope, description: string): ErrorSpec => ({
  http,
  remedy,
  retryable,
  scope,
  description,
});

export const ERROR_TABLE = {
  // REST table of the spec
  unauthorized: e(401, "fix_arguments", false, "call", "Missing or invalid API key or credentials."),
  token_expired: e(401, "refresh_state", false, "call", "OAuth token expired; refresh with POST /oauth/token."),
  forbidden: e(403, "different_path", false, "call", "The key lacks the scope or tier this needs."),
  store_suspended: e(403, "different_path", false, "merchant", "Merchant unavailable."),
  store_not_found: e(404, "fix_arguments", false, "call", "Store does not exist or is inactive."),
  rate_limit_exceeded: e(429, "retry_with_backoff", true, "call", "Per-key limit reached; wait until X-RateLimit-Reset."),
  internal_error: e(500, "retry_with_backoff", true, "call", "Unexpected server error."),
  service_unavailable: e(503, "retry_with_backoff", true, "call", "Overload or maintenance; retry after 30 seconds."),
  // ours: REST codes the spec leaves unnamed
  validation_error: e(400, "fix_arguments", false, "call", "The request does not match the endpoint's schema."),
  not_found: e(404, "fix_arguments", false, "call", "No such resource (or it belongs to another tenant)."),
  route_not_found: e(404, "fix_arguments", false, "call", "No route with that method and path."),
  method_not_allowed: e(405, "fix_arguments", false, "call", "The path exists under other methods; the Allow header lists them."),
  conflict: e(409, "refresh_state", false, "call", "The resource is not in a state that allows this."),
  feature_not_in_tier: e(403, "different_path", false, "call", "The key's tier does not include this feature."),
  sandbox_not_allowed: e(403, "different_path", false, "call", "SANDBOX-tier keys cannot create carts or check out."),
  tier_not_in_plan: e(403, "different_path", false, "call", "The account's plan does not allow keys of that tier; an operator can raise it."),
  too_many_keys: e(409, "different_path", false, "call", "The account holds as many live agent keys as allowed; revoke one first."),
  payment_required: e(402, "different_path", false, "call", "x402 payment required."),
  not_implemented: e(501, "different_path", false, "call", "Reserved endpoint, not implemented."),
  payload_too_large: e(413, "fix_arguments", false, "call", "Request body too large."),
  user_action_required: e(202, "human_decides", false, "call", "A human step-up is needed before settlement."),
  policy_blocked: e(403, "different_path", false, "call", "The risk gate blocked this checkout."),
  actor_unavailable: e(503, "retry_with_backoff", true, "call", "The actor did not answer in time (host move or overload)."),
  // MCP tool error table of the spec
  HUMAN_CONFIRMATION_DECLINED: e(409, "stop", false, "call", "A human was asked and declined; nothing changed."),
  IDEMPOTENCY_KEY_CONFLICT: e(409, "stop", false, "call", "Session already bound to a different idempotency_key."),
  ORDER_OWNERSHIP_FAILED: e(404, "stop", false, "call", "Order not associated with the authenticated customer."),
  PAYMENT_AMOUNT_MISMATCH: e(409, "stop", false, "call", "Captured amount differs from the authorised amount (funds may be captured)."),
  // 409, not 500: the spec makes 500 retryable ("Statuses 429, 500 and 503 are retryable") and says "do not retry codes
  // marked funds captured"; 409 is in its not-retryable list and is what PAYMENT_AMOUNT_MISMATCH, the other
  // funds-captured stop, already uses (docs/checkout.md).
  PAYMENT_CAPTURED_FINALIZATION_FAILED: e(409, "stop", false, "call", "Capture succeeded, finalization failed (funds captured)."),
  HUMAN_CONFIRMATION_REQUIRED: e(403, "human_decides", false, "call", "Action needs human approval and this path cannot ask."),
  NATIVE_CHECKOUT_REQUIRED: e(403, "human_decides", false, "merchant", "Merchant requires its own hosted checkout."),
  ORDER_NOT_CANCELLABLE: e(409, "human_decides", false, "call", "Order past the point where an agent may cancel."),
  RETURN_WINDOW_EXPIRED: e(409, "human_decides", false, "call", "Return window closed; only the merchant can override."),
  AGENT_TOKEN_INVALID: e(401, "fix_arguments", false, "call", "Agent token failed verification."),
  CURRENCY_MISMATCH: e(400, "fix_arguments", false, "call", "Items do not share one currency; one cart per currency."),
  IDENTITY_TOKEN_REJECTED: e(401, "fix_arguments", false, "call", "Identity token failed verification."),
  IDENTITY_TOKEN_STORE_MISMATCH: e(401, "fix_arguments", false, "call", "Identity token issued for a different store."),
  INSUFFICIENT_INPUT: e(400, "fix_arguments", false, "call", "Well-formed but too little to act on."),
  INVALID_ARGUMENT: e(400, "fix_arguments", false, "call", "Malformed argument such as a non-UUID id or out-of-range value."),
  MANDATE_LIMIT_EXCEEDED: e(403, "fix_arguments", false, "call", "Order exceeds the presented payment mandate."),
  MISSING_REQUIRED_ARGUMENT: e(400, "fix_arguments", false, "call", "A required argument was omitted."),
  ORDER_NOT_FOUND: e(404, "fix_arguments", false, "call", "No order with that id for this store."),
  PRODUCT_NOT_FOUND: e(404, "fix_arguments", false, "call", "No product with that id in this store; re-run discovery."),
  TOOL_NOT_FOUND: e(404, "fix_arguments", false, "merchant", "No tool of that name for this store."),
  CART_NOT_FOUND: e(404, "refresh_state", false, "call", "No cart with that id, or expired; create a new cart."),
  CART_NOT_MUTABLE: e(409, "refresh_state", false, "call", "Cart modified, completed or expired since it was read."),
  CHECKOUT_SESSION_NOT_FOUND: e(404, "refresh_state", false, "call", "No such checkout session or expired."),
  CHECKOUT_STATUS_INVALID: e(409, "refresh_state", false, "call", "Operation illegal from the current status."),
  PRECONDITION_NOT_MET: e(409, "refresh_state", false, "call", "A prerequisite step is missing."),
  SESSION_INACTIVE: e(409, "refresh_state", false, "call", "Session accepts no more changes."),
  STATE_RECONFIRMATION_REQUIRED: e(409, "refresh_state", false, "call", "Merchant state moved since the preview; reconfirm."),
  VERIFICATION_NOT_FOUND: e(404, "refresh_state", false, "call", "No attribute verification for that reference."),
  CHECKOUT_BLOCKED_BY_POLICY: e(403, "different_path", false, "call", "A merchant enforcement rule blocked this order."),
  FEATURE_NOT_ENABLED: e(403, "different_path", false, "merchant", "Merchant has not enabled the capability."),
  NOT_ELIGIBLE: e(403, "different_path", false, "call", "Valid request, but the subject does not qualify."),
  PAYMENT_DECLINED: e(402, "different_path", false, "call", "Processor declined the instrument; nothing captured."),
  PAYMENT_METHOD_NOT_CONFIGURED: e(400, "different_path", false, "merchant", "Rail not configured for the store."),
  PLAN_UPGRADE_REQUIRED: e(403, "different_path", false, "merchant", "Merchant plan does not include this path."),
  STATE_EXECUTION_BLOCKED: e(409, "different_path", false, "call", "Merchant state diverged beyond reconfirmation."),
  STORE_NOT_CONFIGURED: e(409, "different_path", false, "merchant", "Store lacks configuration the tool needs."),
  UPSTREAM_RESPONSE_INVALID: e(502, "different_path", false, "call", "Dependency response failed schema validation."),
  CHECKOUT_ALREADY_IN_PROGRESS: e(409, "retry_same_call", true, "call", "Checkout running or completed; same key returns the order."),
  PAYMENT_FAILED_ROLLED_BACK: e(402, "retry_same_call", true, "call", "Payment failed; session back to READY_FOR_PAYMENT."),
  PAYMENT_NOT_APPROVED: e(402, "retry_same_call", true, "call", "Payer did not approve; session back to READY_FOR_PAYMENT."),
  CART_ATTRIBUTE_WRITE_FAILED: e(503, "retry_with_backoff", true, "call", "Attribute could not be written to the platform cart."),
  ENFORCEMENT_UNAVAILABLE: e(503, "retry_with_backoff", true, "call", "Enforcement layer unreachable; refused fail-closed."),
  INTERNAL_ERROR: e(500, "retry_with_backoff", true, "call", "Unexpected fault."),
  UPSTREAM_ERROR: e(502, "retry_with_backoff", true, "call", "Merchant platform returned an error."),
  UPSTREAM_UNAVAILABLE: e(503, "retry_with_backoff", true, "call", "Dependency temporarily unreachable."),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_TABLE, code);
}

/** The plain-data form of an error, as it travels in a reply envelope. */
export interface ErrorData {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class ActorError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>) {
    super(message ?? ERROR_TABLE[code].description);
    this.name = "ActorError";
    this.code = code;
    this.details = details;
  }

  get http(): number {
    return ERROR_TABLE[this.code].http;
  }

  toData(): ErrorData {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }

  static fromData(data: ErrorData): ActorError {
    return new ActorError(isErrorCode(data.code) ? data.code : "internal_error", data.message, data.details);
  }
}

/** Shorthand used by handlers: `throw fail("CART_NOT_FOUND")`. */
export function fail(code: ErrorCode, message?: string, details?: Record<string, unknown>): ActorError {
  return new ActorError(code, message, details);
}

/**
 * Postgres class 22 ("data exception": a NUL byte in text, a numeric out of range, invalid text representation)
 * can only come from a value a caller sent that validation let through: the gateway and the actor host answer
 * it as a 400 validation_error, never a 500.
 */
export function isInputDataError(error: unknown): boolean {
  const e = error as { code?: unknown; name?: unknown } | null;
  return typeof e?.code === "string" && /^22[0-9A-Z]{3}$/.test(e.code) && e.name === "PostgresError";
}
