/** Message contracts of the `agent/<keyPrefix>` actor (TypeBox: validated at the host, typed at the caller). */
import { Type as T, type Static } from "@sinclair/typebox";

export const BucketSpecSchema = T.Object({ id: T.String(), limit: T.Integer({ minimum: 1 }), windowMs: T.Integer({ minimum: 1 }) });

export const CreateKey = T.Object({
  id: T.String({ format: "uuid" }),
  userId: T.String(),
  name: T.String({ minLength: 1, maxLength: 200 }),
  hash: T.String({ pattern: "^[0-9a-f]{64}$" }),
  scopes: T.Array(T.String()),
  /** The key's tier; the actor derives its expiry (SANDBOX: 24 h) from the same instant as created_at. */
  tier: T.String(),
  /**
   * Still sent, no longer read: the actor derives the expiry from its own instant (audit S-6). Kept in the contract
   * so a gateway and an actor host of neighbouring versions understand each other during a rolling upgrade.
   */
  expiresAt: T.Optional(T.Union([T.String(), T.Null()])),
  /**
   * The most live (unrevoked, unexpired) keys a merchant account may hold (config AGENT_KEYS_MAX_LIVE). The actor
   * checks it, and the tier against the account's plan, with the user row locked in the turn that stores the key.
   */
  maxLiveKeys: T.Integer({ minimum: 1 }),
});

/**
 * PUT /api/v1/admin/users/plan: the account's plan changed, sent to each of its live keys (review R2-2). The key reads
 * the plan from `users` itself, so messages of two changes in a row cannot leave it at the earlier one.
 */
export const CapPlan = T.Object({});

export const Authorize = T.Object({
  /** HMAC of the presented key (the plaintext never leaves the gateway). */
  hash: T.String(),
  method: T.String(),
  path: T.String(),
  /** Check the REST route access table (false on MCP, which checks tool auth itself). */
  checkRoute: T.Boolean(),
  /** Rate-limit context; absent when limits are off. The actor derives the buckets (it knows the tier). */
  limits: T.Optional(
    T.Object({ surface: T.String(), ip: T.String(), toolName: T.Optional(T.String()), customerId: T.Optional(T.String()) }),
  ),
});

export const Admit = T.Object({ buckets: T.Array(BucketSpecSchema) });

/** Undo of an admission (a later owner refused the same request); `consumedAt` is the admission's epoch ms. */
export const Release = T.Object({
  buckets: T.Array(BucketSpecSchema),
  consumedAt: T.Number(),
  /** Agent actor only: release what `authorize` admitted for this rate-limit context. */
  limits: T.Optional(T.Object({ surface: T.String(), ip: T.String(), toolName: T.Optional(T.String()), customerId: T.Optional(T.String()) })),
});

export const KeyView = T.Object({
  id: T.String(),
  prefix: T.String(),
  userId: T.String(),
  name: T.String(),
  scopes: T.Array(T.String()),
  tier: T.String(),
  /** The account's plan the key's features are capped at; null for an operator's key (no cap). */
  plan: T.Union([T.String(), T.Null()]),
  createdAt: T.String(),
  expiresAt: T.Union([T.String(), T.Null()]),
  revokedAt: T.Union([T.String(), T.Null()]),
});
export type KeyView = Static<typeof KeyView>;

export interface RateView {
  limit: number;
  remaining: number;
  reset: number;
  retryAfter?: number;
}
