/**
 * Ingestion batches sent to the store actor in parts under a byte budget. Over NATS an actor message is one NATS
 * message, and the server refuses one above its `max_payload` (1 MB by default, infra/nats/cluster.conf), while
 * PUT /catalog takes 8 MiB and the dashboard upload 1,000 lines at a time: such a batch could never be delivered
 * (audit A3-1: retried for 60 s, then 503). A batch whose serialised items pass `INGEST_MESSAGE_BYTES` is sent as
 * several messages, one after the other, and the answers are merged into the one the whole batch gets:
 *
 * - `ingestCatalog` (PUT /catalog, the dashboard upload): the items are first judged here by the store actor's own
 *   pure validation (`validateCatalogItems`), which gives the whole batch's rejections, "repeated in this batch"
 *   included, and a product also in `remove` (rejected, its remove entry not applied); only the valid items are sent,
 *   in parts, then the `remove` ids (after every upsert, as in one turn).
 *   A valid item larger than the budget on its own is rejected ("(item)": "is too large: N bytes of JSON, at most
 *   M") and the rest of the batch goes on, where one message would have been refused whole.
 *   `accepted`, `upserted` and `rejected` carry the indexes of the whole batch; `removed` is the sum, `syncedAt` the
 *   last part's (the store's last sync: a part that writes nothing does not move it).
 * - `recordOrders` (POST /orders): the orders are sent in parts in their order (a repeated externalId in a later
 *   part is a `duplicate` of the earlier one, as within one turn); an order too large for a message on its own is
 *   rejected here, with the errors the actor gives it when it is invalid, else as "(order)": "is too large: …".
 *
 * Each part is its own transaction: when a part fails, the parts before it stay written and the route answers the
 * error. Both writes are idempotent (upsert by externalId, orders by externalId), so the same request sent again
 * converges (docs/decisions.md). A batch under the budget is one message, one transaction, as before.
 */
import { Value } from "@sinclair/typebox/value";
import type { ActorCaller } from "../../actors/runtime/define-actor.ts";
import { storeActor } from "../../actors/store/index.ts";
import { HumanOrderInput, schemaErrors, validateCatalogItems, type RejectedItem } from "../../actors/store/ingest.ts";

/**
 * Serialised items per actor message: half the NATS default `max_payload` (1 MiB), leaving room for the envelope,
 * and for the reply, which is bounded by the items it answers (docs/operations.md).
 */
export const INGEST_MESSAGE_BYTES = 512 * 1024;

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "null");

/**
 * Consecutive groups of `sizes`' indexes whose sizes (plus one byte each for the separator) add up to at most
 * `budget`; an entry larger than the budget on its own makes a group of one.
 */
export function partsByBytes(sizes: readonly number[], budget: number): number[][] {
  const parts: number[][] = [];
  let part: number[] = [];
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (part.length > 0 && bytes + size + 1 > budget) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(i);
    bytes += size + 1;
  });
  if (part.length > 0) parts.push(part);
  return parts;
}

const byIndex = (a: { index: number }, b: { index: number }) => a.index - b.index;

/** What `ingestCatalog` answers. */
export interface CatalogBatchAnswer {
  accepted: number;
  rejected: RejectedItem[];
  upserted: { index: number; externalId: string; id: string }[];
  removed: number;
  /** When the store's catalog was last synced: now when the batch accepted or removed something, else the last sync before it (null if none). */
  syncedAt: string | null;
}

/** The rejection of an item too large for one actor message (the rest of the batch goes on). */
function tooLargeItem(raw: unknown, index: number, bytes: number, budget: number, field: string): RejectedItem {
  const id = (raw as { externalId?: unknown } | null)?.externalId;
  return { index, externalId: typeof id === "string" ? id : null, errors: [{ field, message: `is too large: ${bytes} bytes of JSON, at most ${budget}` }] };
}

/** `ingestCatalog` for a batch of any size: one message when it fits the budget, else parts (see above). */
export async function ingestCatalogInParts(
  actors: ActorCaller,
  slug: string,
  items: readonly unknown[],
  remove?: readonly string[],
  budget = INGEST_MESSAGE_BYTES,
): Promise<CatalogBatchAnswer> {
  const ask = (body: { items: unknown[]; remove?: string[] }) => actors.ask(storeActor, slug, "ingestCatalog", body, { timeoutMs: 60_000 });
  const itemBytes = items.map(bytesOf);
  const removeIds = remove === undefined ? undefined : [...new Set(remove)];
  const removeBytes = (removeIds ?? []).map(bytesOf);
  const total = [...itemBytes, ...removeBytes].reduce((a, b) => a + b + 1, 0);
  if (total <= budget) return ask({ items: [...items], ...(removeIds ? { remove: removeIds } : {}) });

  // A valid item larger than a message on its own cannot be sent: it is rejected alone, and claims nothing (judged
  // again without it, so a later item with its externalId is not "repeated in this batch"). A product also in
  // `remove` is rejected here and its remove entry not sent (`removable`), as one message's turn does.
  const judged = validateCatalogItems(items, removeIds);
  const { removable } = judged;
  let { valid, rejected } = judged;
  const oversize = new Set(valid.filter((v) => itemBytes[v.index]! > budget).map((v) => v.index));
  if (oversize.size) {
    ({ valid, rejected } = validateCatalogItems(items.map((item, i) => (oversize.has(i) ? null : item)), removeIds));
    rejected = rejected.map((r) => (oversize.has(r.index) ? tooLargeItem(items[r.index], r.index, itemBytes[r.index]!, budget, "(item)") : r));
  }
  const sendable = valid.map((v) => v.index);
  const out: CatalogBatchAnswer = { accepted: 0, rejected: [...rejected], upserted: [], removed: 0, syncedAt: null };
  let asked = 0;
  const merge = (r: CatalogBatchAnswer, indexes: readonly number[]) => {
    asked++;
    out.accepted += r.accepted;
    out.upserted.push(...r.upserted.map((u) => ({ ...u, index: indexes[u.index]! })));
    out.rejected.push(...r.rejected.map((x) => ({ ...x, index: indexes[x.index]! })));
    out.removed += r.removed;
    out.syncedAt = r.syncedAt;
  };
  for (const part of partsByBytes(sendable.map((i) => itemBytes[i]!), budget)) {
    const indexes = part.map((p) => sendable[p]!);
    merge(await ask({ items: indexes.map((i) => items[i]) }), indexes);
  }
  const removeParts = removable.length ? partsByBytes(removable.map(bytesOf), budget).map((p) => p.map((i) => removable[i]!)) : [];
  for (const ids of removeParts) merge(await ask({ items: [], remove: ids }), []);
  // nothing valid and nothing to remove: one empty turn still answers the store's last sync, as one batch does
  if (asked === 0) merge(await ask({ items: [] }), []);
  out.rejected.sort(byIndex);
  out.upserted.sort(byIndex);
  return out;
}

/** What `recordOrders` answers. */
export interface OrdersBatchAnswer {
  accepted: number;
  rejected: RejectedItem[];
  orders: { index: number; externalId: string; orderId: string; duplicate: boolean }[];
}

/** The store actor's rejection of an order that fails HumanOrderInput (actors/store/index.ts `recordOrders`). */
function orderSchemaRejection(raw: unknown, index: number): RejectedItem | null {
  if (Value.Check(HumanOrderInput, raw)) return null;
  const errors = schemaErrors(HumanOrderInput, raw, 10, "(order)");
  return { index, externalId: (raw as { externalId?: string } | null)?.externalId ?? null, errors };
}

/** `recordOrders` for a batch of any size: one message when it fits the budget, else parts in order (see above). */
export async function recordOrdersInParts(actors: ActorCaller, slug: string, orders: readonly unknown[], budget = INGEST_MESSAGE_BYTES): Promise<OrdersBatchAnswer> {
  const ask = (batch: unknown[]) => actors.ask(storeActor, slug, "recordOrders", { orders: batch });
  const sizes = orders.map(bytesOf);
  if (sizes.reduce((a, b) => a + b + 1, 0) <= budget) return ask([...orders]);

  const out: OrdersBatchAnswer = { accepted: 0, rejected: [], orders: [] };
  const sendable: number[] = [];
  orders.forEach((raw, index) => {
    const tooLarge = sizes[index]! > budget ? (orderSchemaRejection(raw, index) ?? tooLargeItem(raw, index, sizes[index]!, budget, "(order)")) : null;
    if (tooLarge) out.rejected.push(tooLarge);
    else sendable.push(index);
  });
  for (const part of partsByBytes(sendable.map((i) => sizes[i]!), budget)) {
    const indexes = part.map((p) => sendable[p]!);
    const r = await ask(indexes.map((i) => orders[i]));
    out.accepted += r.accepted;
    out.rejected.push(...r.rejected.map((x) => ({ ...x, index: indexes[x.index]! })));
    out.orders.push(...r.orders.map((o) => ({ ...o, index: indexes[o.index]! })));
  }
  out.rejected.sort(byIndex);
  out.orders.sort(byIndex);
  return out;
}
