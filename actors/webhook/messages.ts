/** Message contracts of the `webhook/<endpointId>` actor (TypeBox: validation, docs and types from one source). */
import { Type as T, type Static } from "@sinclair/typebox";

export const WEBHOOK_EVENT_KINDS = ["order.created", "order.status_changed", "checkout.abandoned"] as const;
export const WebhookEventKindSchema = T.Union(WEBHOOK_EVENT_KINDS.map((k) => T.Literal(k)));

export const RegisterEndpoint = T.Object({
  storeSlug: T.String({ minLength: 1 }),
  url: T.String({ minLength: 1 }),
  events: T.Array(WebhookEventKindSchema, { minItems: 1 }),
  /** Sealed by the gateway (the plaintext never travels on the bus nor lands in an actor's reply log). */
  secretSealed: T.String({ minLength: 1 }),
  createdBy: T.Union([T.String(), T.Null()]),
});

export const RotateSecret = T.Object({
  secretSealed: T.String({ minLength: 1 }),
  /** How long the retiring secret keeps signing alongside the new one. */
  overlapMs: T.Integer({ minimum: 0, maximum: 7 * 24 * 3600_000 }),
});

export const Redeliver = T.Object({ deliveryId: T.String({ format: "uuid" }) });

export const DeliverDue = T.Object({});

/** A worker's report of the attempts it made (sent by the actor's own worker after the HTTP calls). */
export const RecordAttempts = T.Object({
  reports: T.Array(
    T.Object({
      id: T.String(),
      /** The attempt's number as sent (counted at the claim); absent from a worker of an older version. */
      attempt: T.Optional(T.Integer({ minimum: 1 })),
      sentAt: T.Number(),
      doneAt: T.Number(),
      statusCode: T.Union([T.Integer(), T.Null()]),
      error: T.Union([T.String(), T.Null()]),
      delivered: T.Boolean(),
      durationMs: T.Number(),
    }),
    { maxItems: 1000 },
  ),
});
export const RemoveEndpoint = T.Object({});
/** The merchant turns a disabled endpoint back on: breaker and failure streak reset; nothing missed is replayed. */
export const EnableEndpoint = T.Object({});
/** The merchant turns an endpoint off (as the service does after DISABLE_AFTER_FAILING_MS of failures). */
export const DisableEndpoint = T.Object({});

export type RegisterEndpointMsg = Static<typeof RegisterEndpoint>;

export interface EndpointView {
  id: string;
  storeSlug: string;
  url: string;
  events: string[];
  createdAt: string;
  /** When the previous secret stops signing (null when no rotation is in progress). */
  previousSecretExpiresAt: string | null;
  breaker: "closed" | "open" | "half_open";
  /** False once disabled: no new event is fanned out to it and nothing is sent until it is enabled again. */
  enabled: boolean;
  disabledAt: string | null;
  /** Why it was disabled (the failure streak and its last error, or the merchant); null while enabled. */
  disabledReason: string | null;
  /** First failed attempt since the last 2xx (null when the last outcome was a 2xx, or nothing has failed yet). */
  failingSince: string | null;
}

export interface DeliveryView {
  id: string;
  eventId: string;
  event: string;
  status: "pending" | "delivered" | "failed" | "dead";
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

export interface DeliverDueResult {
  /** Deliveries handed to a worker by this turn (their outcome is recorded by a later `record` turn). */
  claimed: number;
  more: boolean;
}
