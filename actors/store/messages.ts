/**
 * Messages of the `store/<slug>` actor (TypeBox: the runtime validates bodies against them). The gateway
 * validates the HTTP shapes first; catalog items travel as `unknown` because the actor validates them one by one
 * (a bad item is reported, never a bad batch).
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { CodePointString } from "../../infra/code-point-string.ts";
import { InventoryItemInput, MAX_CATALOG_BATCH, PoliciesInput, ShippingZoneInput } from "./ingest.ts";

export const StoreMessages = {
  /** Upsert up to 1,000 products (by externalId) and deactivate `remove` (externalIds) in one turn. */
  ingestCatalog: T.Object({
    items: T.Array(T.Unknown(), { maxItems: MAX_CATALOG_BATCH }),
    remove: T.Optional(T.Array(CodePointString({ minLength: 1, maxLength: 255 }), { maxItems: MAX_CATALOG_BATCH })),
  }),
  setInventory: T.Object({ items: T.Array(InventoryItemInput, { minItems: 1, maxItems: MAX_CATALOG_BATCH }) }),
  /** Human orders, the trust engine's input: HumanOrderInput items the actor checks one by one (a bad one is rejected alone). */
  recordOrders: T.Object({ orders: T.Array(T.Unknown(), { minItems: 1, maxItems: 500 }) }),
  setPolicies: T.Object({ policies: PoliciesInput }),
  setShippingZones: T.Object({ zones: T.Array(ShippingZoneInput, { maxItems: 100 }) }),
  negotiate: T.Object({
    productId: T.String({ format: "uuid" }),
    agentKeyId: T.String({ format: "uuid" }),
    bidMinor: T.Integer({ minimum: 0 }),
    currency: T.String({ pattern: "^[A-Z]{3}$" }),
  }),
};

export type IngestCatalogBody = Static<(typeof StoreMessages)["ingestCatalog"]>;

/** Topic and payload published after every committed catalog write. */
export const CATALOG_CHANGED = "catalog.changed";
export interface CatalogChangedEvent {
  storeSlug: string;
  /** Product ids inserted or updated (including stock-only changes). */
  upserted: string[];
  /** Product ids deactivated (removed from the catalog). */
  removed: string[];
  /**
   * Product ids whose held units changed (a checkout's hold, its release, cancel or expiry) and nothing else: search
   * re-reads only their buyable stock (stock − held) and flips `inStock` in its index, without re-indexing the
   * product. Only tracked stock is ever held, so untracked products never appear here.
   */
  held?: string[];
}

/**
 * The event for units held or given back (`catalog.changed` with `held` only), or null when nothing tracked moved:
 * an untracked product's checkout publishes nothing. One event per hold or release, the ids deduplicated.
 */
export function heldStockChanged(storeSlug: string, productIds: readonly string[]): CatalogChangedEvent | null {
  if (productIds.length === 0) return null;
  return { storeSlug, upserted: [], removed: [], held: [...new Set(productIds)] };
}

/** Published after human orders are recorded (the trust engine may recompute). */
export const STORE_ORDERS_RECORDED = "store.orders";
/** Published after policies or shipping zones change. */
export const STORE_CHANGED = "store.changed";
