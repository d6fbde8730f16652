/**
 * Writing side of the webhook outbox. Call inside the transaction that makes the state change
 * (`const tx = await ctx.tx()`), so the event commits with it or not at all. Payload shapes: docs/webhooks.md.
 *
 * An event of a store without a webhook endpoint is inserted already dispatched (migration 0099's trigger, whatever
 * writes the row: here or the order statements' own CTEs in actors/store/commerce.ts): the fan-out would only have
 * marked it so, with an update that is never HOT (`dispatched_at` is in webhook_events_undispatched's predicate).
 * The fan-out of the others reads a watermark over `fanout_xid` (migration 0101; dispatcher.ts) and updates no event.
 */
import type { Sql } from "../../infra/db.ts";

export type WebhookEventKind = "order.created" | "order.status_changed" | "checkout.abandoned";

export interface OutboxEvent {
  storeSlug: string;
  kind: WebhookEventKind;
  /** The JSON body receivers get (without transport fields; `event` and `timestamp` are part of it). */
  payload: Record<string, unknown>;
}

export const WEBHOOK_OUTBOX_TOPIC = "webhook.outbox";

export async function enqueueWebhookEvent(tx: Sql, e: OutboxEvent): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    INSERT INTO webhook_events (store_slug, kind, payload) VALUES (${e.storeSlug}, ${e.kind}, ${tx.json(e.payload as never)})
    RETURNING id`;
  return row.id;
}
