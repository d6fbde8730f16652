/**
 * The `store/<slug>` actor: the single writer of a merchant's catalog, inventory, policies, shipping zones, the
 * human orders it pushes and its negotiation offers. Every handler writes inside the turn's transaction (one
 * batch = one transaction) and publishes `catalog.changed` after commit, which the search indexer follows.
 * Reads of the same data go to the read model (`actors/store/reads.ts`), not through this actor.
 */
import { Value } from "@sinclair/typebox/value";
import type { Sql } from "../../infra/db.ts";
import { defineActor, type ActorContext } from "../runtime/define-actor.ts";
import { fail } from "../runtime/errors.ts";
import {
  assignVariantIds,
  effectiveInStock,
  HumanOrderInput,
  orderFromInput,
  policiesFromInput,
  rollUpOverflow,
  rollUpVariants,
  schemaErrors,
  unstorableField,
  validateCatalogItems,
  zonesFromInput,
  type ItemError,
  type RejectedItem,
  type ShippingZoneFields,
} from "./ingest.ts";
import { buyerRefOf } from "./buyer-ref.ts";
import { PRICE_HISTORY_ROW_SECONDS } from "./reads.ts";
import { commerceHandlers, commerceMessages, refundReminders } from "./commerce.ts";
import { settingsHandlers, settingsMessages } from "./settings.ts";
import { CATALOG_CHANGED, STORE_CHANGED, STORE_ORDERS_RECORDED, StoreMessages, type CatalogChangedEvent } from "./messages.ts";
import { assertBidCurrency, decideBid, noLineAtListPrice, OFFER_TTL_MS, priorBidRounds } from "./negotiation.ts";
import type { NegotiationRules, Policies, Variant } from "./schemas.ts";

export interface StoreActorState {
  /** Completed catalog batches (a cheap activity counter; the catalog itself lives in its tables). */
  batches: number;
  lastIngestAt: string | null;
}

interface StoreHead {
  slug: string;
  currency: string;
  policies: Policies;
  negotiation_rules: NegotiationRules | null;
}

async function loadStore(db: Sql, slug: string, lock = false): Promise<StoreHead> {
  const rows = lock
    ? await db<StoreHead[]>`SELECT slug, currency, policies, negotiation_rules FROM stores WHERE slug = ${slug} FOR UPDATE`
    : await db<StoreHead[]>`SELECT slug, currency, policies, negotiation_rules FROM stores WHERE slug = ${slug}`;
  if (!rows[0]) throw fail("store_not_found", `No store ${slug}.`);
  return rows[0];
}

function publishChanged(ctx: ActorContext<StoreActorState>, upserted: string[], removed: string[]): void {
  if (upserted.length === 0 && removed.length === 0) return;
  const ev: CatalogChangedEvent = { storeSlug: ctx.id, upserted, removed };
  ctx.publish(CATALOG_CHANGED, ev);
}

/**
 * One object, not a batch: a string Postgres cannot store (NUL, lone surrogate) is the request's 400 naming its
 * field, instead of a 400 naming nothing (jsonb refused it) or a silent U+FFFD (text columns).
 */
function assertStorable(value: unknown, path: string): void {
  const bad = unstorableField(value, path);
  if (bad) throw fail("validation_error", `Invalid ${bad.field}: ${bad.message}`, { field: bad.field });
}

/**
 * An inventory or order item with its product id as Postgres prints a uuid (lower case), so that the lookups, which
 * compare the id as text and match rows by it, find the product (audit M-6). `format: "uuid"` accepts either case
 * (RFC 9562: hex digits are case-insensitive), as every other UUID the service takes; each handler normalises its
 * items once, before any lookup.
 */
function withStoredProductId<I extends { productId?: string | undefined }>(item: I): I {
  return item.productId === undefined ? item : { ...item, productId: item.productId.toLowerCase() };
}

interface ExistingRow {
  id: string;
  external_id: string;
  price_minor: number;
  currency: string;
  variants: Variant[];
}

export const storeActor = defineActor({
  kind: "store",
  initialState: (): StoreActorState => ({ batches: 0, lastIngestAt: null }),
  messages: { ...StoreMessages, ...commerceMessages, ...settingsMessages },
  // Refunds left APPROVED are driven again (actors/store/refund-flow.ts).
  reminders: refundReminders,
  handlers: {
    ...commerceHandlers,
    ...settingsHandlers,
    async ingestCatalog(ctx, body) {
      // a product also in `remove` is rejected and its remove entry left out (`removable`): the batch told it both ways
      const { valid, rejected, removable } = validateCatalogItems(body.items, body.remove ?? []);
      const tx = await ctx.tx();
      await loadStore(tx, ctx.id, true);
      const externalIds = valid.map((v) => v.fields.externalId);
      const existing = externalIds.length
        ? await tx<ExistingRow[]>`SELECT id, external_id, price_minor, currency, variants FROM products
            WHERE store_slug = ${ctx.id} AND external_id = ANY(${externalIds})`
        : [];
      const byExt = new Map(existing.map((r) => [r.external_id, r]));
      const rows = valid.map(({ fields }) => {
        const prev = byExt.get(fields.externalId);
        return {
          id: prev?.id ?? crypto.randomUUID(),
          store_slug: ctx.id,
          external_id: fields.externalId,
          title: fields.title,
          description: fields.description,
          brand: fields.brand,
          category: fields.category,
          tags: fields.tags,
          gtin: fields.gtin,
          price_minor: fields.priceMinor,
          compare_at_price_minor: fields.compareAtPriceMinor,
          currency: fields.currency,
          stock_quantity: fields.stockQuantity,
          in_stock: fields.inStock,
          images: fields.images,
          variants: assignVariantIds(fields.variants, prev?.variants ?? []),
          attributes: fields.attributes,
          active: fields.active,
        };
      });
      const upserted: string[] = [];
      for (let i = 0; i < rows.length; i += 250) {
        const chunk = rows.slice(i, i + 250);
        const out = await tx.unsafe<{ id: string }[]>(
          `INSERT INTO products (id, store_slug, external_id, title, description, brand, category, tags, gtin, price_minor,
             compare_at_price_minor, currency, stock_quantity, in_stock, images, variants, attributes, active)
           SELECT id, store_slug, external_id, title, description, brand, category, tags, gtin, price_minor,
             compare_at_price_minor, currency, stock_quantity, in_stock, images, variants, attributes, active
           FROM jsonb_populate_recordset(NULL::products, $1::text::jsonb)
           ON CONFLICT (store_slug, external_id) DO UPDATE SET
             title = EXCLUDED.title, description = EXCLUDED.description, brand = EXCLUDED.brand,
             category = EXCLUDED.category, tags = EXCLUDED.tags, gtin = EXCLUDED.gtin,
             price_minor = EXCLUDED.price_minor, compare_at_price_minor = EXCLUDED.compare_at_price_minor,
             currency = EXCLUDED.currency, stock_quantity = EXCLUDED.stock_quantity, in_stock = EXCLUDED.in_stock,
             images = EXCLUDED.images, variants = EXCLUDED.variants, attributes = EXCLUDED.attributes,
             active = EXCLUDED.active, updated_at = now(), synced_at = now()
           RETURNING id`,
          [JSON.stringify(chunk)],
        );
        for (const r of out) upserted.push(r.id);
      }
      // A price observation per new product and per price (or currency) change, stored at most one row per product,
      // currency and hour (migration 0098): the read answers no finer than an hour (1/720 of 30 days), so an
      // observation in the hour of the product's latest row of its currency folds into that row (its price and time
      // become the observation's, its lowest, highest and first price keep the ones it replaced); any other starts a
      // row. A merchant re-pricing a product without end adds at most 24 rows a day per currency, and retention
      // (infra/retention.ts) drops them past 90 days. One statement, as the plain INSERT was. The store's row lock
      // (loadStore) makes this turn the only writer of these products' rows.
      const points = rows
        .filter((r) => {
          const prev = byExt.get(r.external_id);
          return !prev || Number(prev.price_minor) !== r.price_minor || prev.currency !== r.currency;
        })
        .map((r) => ({ product_id: r.id, price_minor: r.price_minor, currency: r.currency }));
      if (points.length) {
        await tx.unsafe(
          `WITH p AS (
             SELECT product_id, price_minor, currency FROM jsonb_populate_recordset(NULL::product_price_history, $1::text::jsonb)
           ), c AS (
             SELECT p.product_id, p.price_minor, p.currency, l.id
             FROM p LEFT JOIN LATERAL (
               -- the hour on the epoch's grid (not date_trunc: the session's time zone may be off the hour)
               SELECT h.id FROM product_price_history h
               WHERE h.product_id = p.product_id AND h.currency = p.currency
                 AND h.recorded_at >= to_timestamp(floor(date_part('epoch', now()) / ${PRICE_HISTORY_ROW_SECONDS}) * ${PRICE_HISTORY_ROW_SECONDS}) AND h.recorded_at <= now()
               ORDER BY h.recorded_at DESC, h.id DESC LIMIT 1) l ON true
           ), folded AS (
             UPDATE product_price_history h SET price_minor = c.price_minor, recorded_at = now(),
               lo_minor = least(coalesce(h.lo_minor, h.price_minor), c.price_minor),
               hi_minor = greatest(coalesce(h.hi_minor, h.price_minor), c.price_minor),
               first_minor = coalesce(h.first_minor, h.price_minor)
             FROM c WHERE h.id = c.id
           )
           INSERT INTO product_price_history (product_id, price_minor, currency)
           SELECT product_id, price_minor, currency FROM c WHERE id IS NULL`,
          [JSON.stringify(points)],
        );
      }
      let removed: string[] = [];
      const removeIds = removable;
      if (removeIds.length) {
        const gone = await tx<{ id: string }[]>`UPDATE products SET active = false, updated_at = now()
          WHERE store_slug = ${ctx.id} AND external_id = ANY(${removeIds}) AND active RETURNING id`;
        removed = gone.map((r) => r.id);
      }
      // Only a batch that wrote or removed something is a sync (audit A-5): `last_sync_at` is the trust engine's
      // "age of last successful sync" and the input of every product's freshness and confidences, so a batch whose
      // items were all rejected, or an empty one, must not make stale prices and stock read fresh. It answers the
      // store's last sync instead (null before the first).
      // The answer's syncedAt is the stored last_sync_at (the database's clock, as the merchant profile's lastSyncAt
      // and the next empty batch show it), not this host's clock read later in the turn.
      const now = new Date(ctx.now()).toISOString();
      const [store] =
        valid.length > 0 || removed.length > 0
          ? await tx<{ last_sync_at: Date | null }[]>`UPDATE stores SET last_sync_at = now(), updated_at = now() WHERE slug = ${ctx.id} RETURNING last_sync_at`
          : await tx<{ last_sync_at: Date | null }[]>`SELECT last_sync_at FROM stores WHERE slug = ${ctx.id}`;
      const syncedAt = store?.last_sync_at ? store.last_sync_at.toISOString() : null;
      ctx.state = { batches: ctx.state.batches + 1, lastIngestAt: now };
      const inactive = new Set(rows.filter((r) => !r.active).map((r) => r.id));
      publishChanged(ctx, upserted.filter((id) => !inactive.has(id)), [...removed, ...inactive]);
      return {
        accepted: valid.length,
        rejected: rejected as RejectedItem[],
        upserted: rows.map((r, i) => ({ index: valid[i]!.index, externalId: r.external_id, id: r.id })),
        removed: removed.length,
        syncedAt,
      };
    },

    async setInventory(ctx, body) {
      const tx = await ctx.tx();
      await loadStore(tx, ctx.id, true);
      // Ids as stored (audit M-6): an upper-case product id was "no such product in this store".
      const items = body.items.map(withStoredProductId);
      const ids = items.flatMap((i) => (i.productId ? [i.productId] : []));
      const exts = items.flatMap((i) => (i.externalId ? [i.externalId] : []));
      const products = await tx<{ id: string; external_id: string; variants: Variant[]; stock_quantity: number | null; in_stock: boolean }[]>`
        SELECT id, external_id, variants, stock_quantity, in_stock FROM products
        WHERE store_slug = ${ctx.id} AND (id::text = ANY(${ids}) OR external_id = ANY(${exts})) FOR UPDATE`;
      const byId = new Map(products.map((p) => [p.id, p]));
      const byExt = new Map(products.map((p) => [p.external_id, p]));
      const rejected: RejectedItem[] = [];
      const touched = new Map<string, (typeof products)[number]>();
      items.forEach((item, index) => {
        const errors: ItemError[] = [];
        if (!item.productId && !item.externalId) errors.push({ field: "productId", message: "productId or externalId is required" });
        const p = item.productId ? byId.get(item.productId) : item.externalId ? byExt.get(item.externalId) : undefined;
        if ((item.productId || item.externalId) && !p) errors.push({ field: item.productId ? "productId" : "externalId", message: "no such product in this store" });
        if (p && item.productId && item.externalId && p.external_id !== item.externalId) errors.push({ field: "externalId", message: "does not match productId" });
        const variantId = item.variantId?.toLowerCase();
        if (p && variantId && !p.variants.some((v) => v.id.toLowerCase() === variantId)) errors.push({ field: "variantId", message: "no such variant of this product" });
        // Its stock is the roll-up of its variants' (rollUpVariants), as PUT /catalog stores it: a product-level
        // number would make the product and its variants disagree until the next write (audit A2 MED-1).
        if (p && !variantId && p.variants.length > 0) {
          errors.push({ field: "variantId", message: "required for a product with variants (its stock is the sum of theirs)" });
        }
        if (errors.length || !p) {
          rejected.push({ index, externalId: item.externalId ?? p?.external_id ?? null, errors });
          return;
        }
        const prev = touched.get(p.id) ?? p;
        const cur = { ...prev, variants: prev.variants.map((v) => ({ ...v })) };
        if (variantId) {
          const v = cur.variants.find((x) => x.id.toLowerCase() === variantId)!;
          v.stockQuantity = item.stockQuantity;
          v.inStock = effectiveInStock(item.stockQuantity, item.inStock);
          const roll = rollUpVariants(cur.variants);
          // The roll-up goes into the `integer` stock_quantity: past 2^31 - 1 the UPDATE failed the whole request,
          // the other items too (audit W-4). This item is rejected and the product keeps its earlier state.
          const overflow = rollUpOverflow(roll.stockQuantity);
          if (overflow) {
            rejected.push({ index, externalId: item.externalId ?? p.external_id, errors: [{ field: "stockQuantity", message: overflow }] });
            return;
          }
          cur.stock_quantity = roll.stockQuantity;
          cur.in_stock = roll.inStock;
        } else {
          cur.stock_quantity = item.stockQuantity;
          cur.in_stock = effectiveInStock(item.stockQuantity, item.inStock);
        }
        touched.set(p.id, cur);
      });
      for (const p of touched.values()) {
        await tx`UPDATE products SET stock_quantity = ${p.stock_quantity}, in_stock = ${p.in_stock},
          variants = ${tx.json(p.variants as never)}, updated_at = now(), synced_at = now() WHERE id = ${p.id}`;
      }
      if (touched.size) await tx`UPDATE stores SET last_sync_at = now(), updated_at = now() WHERE slug = ${ctx.id}`;
      publishChanged(ctx, [...touched.keys()], []);
      return { updated: items.length - rejected.length, products: touched.size, rejected };
    },

    async recordOrders(ctx, body) {
      const tx = await ctx.tx();
      await loadStore(tx, ctx.id);
      const rejected: RejectedItem[] = [];
      const recorded: { index: number; externalId: string; orderId: string; duplicate: boolean }[] = [];
      const hash = (b: string) => buyerRefOf(ctx.id, b);
      for (const [index, raw] of body.orders.entries()) {
        if (!Value.Check(HumanOrderInput, raw)) {
          const errors = schemaErrors(HumanOrderInput, raw, 10, "(order)");
          rejected.push({ index, externalId: (raw as { externalId?: string })?.externalId ?? null, errors });
          continue;
        }
        // Ids as stored (audit M-6): an upper-case product id was stored unlinked, a title snapshot only.
        const { order, errors } = orderFromInput({ ...raw, items: raw.items.map(withStoredProductId) }, hash, ctx.now());
        if (!order) {
          rejected.push({ index, externalId: raw.externalId, errors });
          continue;
        }
        const dup = await tx<{ order_id: string }[]>`SELECT order_id FROM merchant_order_refs WHERE store_slug = ${ctx.id} AND external_id = ${order.externalId}`;
        if (dup[0]) {
          recorded.push({ index, externalId: order.externalId, orderId: dup[0].order_id, duplicate: true });
          continue;
        }
        // Items name products by id or external id; unknown ones are kept as title snapshots only.
        const refs = await tx<{ id: string; external_id: string; title: string }[]>`SELECT id, external_id, title FROM products
          WHERE store_slug = ${ctx.id} AND (id::text = ANY(${order.items.flatMap((i) => (i.productId ? [i.productId] : []))})
            OR external_id = ANY(${order.items.flatMap((i) => (i.externalId ? [i.externalId] : []))}))`;
        const created = order.createdAt ?? new Date(ctx.now()).toISOString();
        const [row] = await tx<{ id: string }[]>`INSERT INTO orders (store_slug, channel, buyer_ref, status, total_minor, currency,
            payment_rail, fulfilled_on_time, disputed, refunded_minor, created_at, updated_at)
          VALUES (${ctx.id}, 'human', ${order.buyerRef}, ${order.status}, ${order.totalMinor}, ${order.currency}, 'merchant',
            ${order.fulfilledOnTime}, ${order.disputed}, ${order.refundedMinor}, ${created}, ${created}) RETURNING id`;
        for (const it of order.items) {
          const p = refs.find((r) => r.id === it.productId || r.external_id === it.externalId);
          await tx`INSERT INTO order_items (order_id, product_id, title, quantity, unit_price_minor)
            VALUES (${row!.id}, ${p?.id ?? null}, ${it.title ?? p?.title ?? it.externalId ?? "item"}, ${it.quantity}, ${it.unitPriceMinor})`;
        }
        await tx`INSERT INTO order_events (order_id, at, type, to_status, data)
          VALUES (${row!.id}, ${created}, 'imported', ${order.status}, ${tx.json({ externalId: order.externalId, source: "merchant_api" })})`;
        await tx`INSERT INTO merchant_order_refs (store_slug, external_id, order_id) VALUES (${ctx.id}, ${order.externalId}, ${row!.id})`;
        recorded.push({ index, externalId: order.externalId, orderId: row!.id, duplicate: false });
      }
      const fresh = recorded.filter((r) => !r.duplicate).map((r) => r.orderId);
      if (fresh.length) ctx.publish(STORE_ORDERS_RECORDED, { storeSlug: ctx.id, orderIds: fresh });
      return { accepted: recorded.length, rejected, orders: recorded };
    },

    async setPolicies(ctx, body) {
      assertStorable(body.policies, "");
      const tx = await ctx.tx();
      const store = await loadStore(tx, ctx.id, true);
      const policies = policiesFromInput(body.policies, store.currency);
      const negotiation = body.policies.negotiation;
      if (negotiation && negotiation.floorPercent > negotiation.autoAcceptPercent) {
        throw fail("validation_error", "negotiation.floorPercent must not exceed autoAcceptPercent", { field: "negotiation.floorPercent" });
      }
      // The version moves only when the buyer-facing policies change (audit A-7): it is part of every checkout's
      // state hash and a change blocks each previewed session of the store, so the same policies sent again (as
      // integrations do with each sync) or a change of the negotiation rules alone (not a term the buyer approved)
      // must not end checkouts in flight. jsonb equality ignores key order.
      const [row] =
        negotiation === undefined
          ? await tx<{ policy_version: number }[]>`UPDATE stores SET policies = ${tx.json(policies as never)},
              policy_version = policy_version + (policies IS DISTINCT FROM ${tx.json(policies as never)}::jsonb)::int,
              updated_at = now() WHERE slug = ${ctx.id} RETURNING policy_version`
          : await tx<{ policy_version: number }[]>`UPDATE stores SET policies = ${tx.json(policies as never)},
              negotiation_rules = ${negotiation === null ? null : tx.json(negotiation as never)},
              policy_version = policy_version + (policies IS DISTINCT FROM ${tx.json(policies as never)}::jsonb)::int,
              updated_at = now() WHERE slug = ${ctx.id} RETURNING policy_version`;
      ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "policies" });
      return { policies, policyVersion: row!.policy_version, negotiation: negotiation === undefined ? store.negotiation_rules : negotiation };
    },

    async setShippingZones(ctx, body) {
      assertStorable(body.zones, "zones");
      const { zones, errors } = zonesFromInput(body.zones);
      if (errors.length) throw fail("validation_error", `Invalid ${errors[0]!.field}: ${errors[0]!.message}`, { field: errors[0]!.field, errors });
      const tx = await ctx.tx();
      await loadStore(tx, ctx.id, true);
      // A zone sent again with the same terms keeps its row and id (audit A-7): a checkout that picked it at preview
      // still finds its quote at payment. A zone whose terms changed, or that is gone, is replaced or deleted, and a
      // session that picked it is asked to pick again (docs/checkout.md "At payment").
      const stored = await tx<{ id: string; name: string; countries: string[]; postal_prefixes: string[]; currency: string; base_minor: number; per_item_minor: number; free_over_minor: number | null; min_days: number; max_days: number }[]>`
        SELECT id, name, countries, postal_prefixes, currency, base_minor, per_item_minor, free_over_minor, min_days, max_days
        FROM shipping_zones WHERE store_slug = ${ctx.id}`;
      const termsOf = (z: ShippingZoneFields) =>
        JSON.stringify([z.name, z.countries, z.postalPrefixes, z.currency, Number(z.baseMinor), Number(z.perItemMinor), z.freeOverMinor === null ? null : Number(z.freeOverMinor), z.minDays, z.maxDays]);
      const kept = new Set(zones.map(termsOf));
      const unchanged = new Set<string>();
      const gone: string[] = [];
      for (const r of stored) {
        const terms = termsOf({ name: r.name, countries: r.countries, postalPrefixes: r.postal_prefixes, currency: r.currency, baseMinor: r.base_minor, perItemMinor: r.per_item_minor, freeOverMinor: r.free_over_minor, minDays: r.min_days, maxDays: r.max_days });
        if (kept.has(terms)) unchanged.add(terms);
        else gone.push(r.id);
      }
      if (gone.length) await tx`DELETE FROM shipping_zones WHERE store_slug = ${ctx.id} AND id = ANY(${gone}::uuid[])`;
      for (const z of zones.filter((x) => !unchanged.has(termsOf(x)))) {
        await tx`INSERT INTO shipping_zones (store_slug, name, countries, postal_prefixes, currency, base_minor, per_item_minor,
            free_over_minor, min_days, max_days)
          VALUES (${ctx.id}, ${z.name}, ${z.countries}, ${z.postalPrefixes}, ${z.currency}, ${z.baseMinor}, ${z.perItemMinor},
            ${z.freeOverMinor}, ${z.minDays}, ${z.maxDays})`;
      }
      ctx.publish(STORE_CHANGED, { storeSlug: ctx.id, what: "shipping_zones" });
      return { zones: zones.length };
    },

    async negotiate(ctx, body) {
      const tx = await ctx.tx();
      const store = await loadStore(tx, ctx.id);
      const [p] = await tx<{ id: string; price_minor: number; currency: string; category: string | null; variants: { priceMinor: number | null }[] | null }[]>`
        SELECT id, price_minor, currency, category, variants FROM products WHERE id = ${body.productId} AND store_slug = ${ctx.id} AND active`;
      if (!p) throw fail("not_found", "No such product at this merchant.");
      assertBidCurrency(p.currency, body.currency);
      const n = await priorBidRounds(tx, body.agentKeyId, p.id);
      const decision = decideBid({
        rules: store.negotiation_rules,
        listPriceMinor: Number(p.price_minor),
        bidMinor: body.bidMinor,
        category: p.category,
        priorRounds: n,
        noLineAtListPrice: noLineAtListPrice(Number(p.price_minor), Array.isArray(p.variants) ? p.variants : []),
      });
      const base = { maxRounds: store.negotiation_rules?.maxRounds ?? null, listPriceMinor: Number(p.price_minor), currency: p.currency };
      // A bid past maxRounds is not a round: it is answered (rejected, max_rounds_reached) and not written, so a key's
      // rows per product stay bounded by maxRounds (audit A1 L3); `round` is the last one counted.
      if (decision.reason === "max_rounds_reached") return { offerId: null, round: n, expiresAt: null, ...base, ...decision };
      const expiresAt = decision.status === "accepted" ? new Date(ctx.now() + OFFER_TTL_MS).toISOString() : null;
      const [row] = await tx<{ id: string }[]>`INSERT INTO negotiation_offers (store_slug, product_id, agent_key_id, round, status,
          bid_minor, list_price_minor, counter_minor, negotiated_price_minor, currency, expires_at)
        VALUES (${ctx.id}, ${p.id}, ${body.agentKeyId}, ${n + 1}, ${decision.status}, ${body.bidMinor}, ${Number(p.price_minor)},
          ${decision.counterPriceMinor}, ${decision.negotiatedPriceMinor}, ${p.currency}, ${expiresAt}) RETURNING id`;
      return { offerId: row!.id as string | null, round: n + 1, expiresAt, ...base, ...decision };
    },
  },
});
