/**
 * Merchant ingestion under /api/v1/merchant/stores/{slug} (Bearer JWT of a user that owns the store, or an
 * operator; anyone else gets 404 store_not_found so other stores are not revealed). Each route validates the
 * envelope of the request, then sends one message to `store/<slug>`, which validates item by item and writes the
 * batch in one transaction. A catalog or orders batch over 512 KiB of JSON goes in parts, one transaction each, and
 * is answered as one batch (ingest-parts.ts: NATS max_payload).
 *
 * PUT /catalog answers 200 with `{accepted, rejected: [{index, externalId, errors}], upserted, removed}` even when
 * some (or all) items are rejected: the batch was processed, the per-item outcome is in the body
 * (docs/decisions.md). A malformed envelope (not an array, more than 1,000 items) is 400.
 *
 * GET /policies and GET /shipping-zones answer the body their PUT takes (merchant-reads.ts `declaredPolicies`,
 * `declaredShippingZones`): an integration reads, changes one field and PUTs the answer back.
 */
import { Elysia, t } from "elysia";
import { storeActor } from "../../actors/store/index.ts";
import {
  InventoryItemInput,
  MAX_CATALOG_BATCH,
  PoliciesInput,
  policiesView,
  schemaErrors,
  ShippingZoneInput,
  unstorableField,
  type RejectedItem,
} from "../../actors/store/ingest.ts";
import { declaredPolicies, declaredShippingZones } from "../../actors/store/merchant-reads.ts";
import { assertStoreWriter, findStore } from "../../actors/store/reads.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { ingestCatalogInParts, recordOrdersInParts } from "./ingest-parts.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import { CodePointString } from "../plugins/schema-formats.ts";
import { strictJsonBody } from "./strict-body.ts";
import { storeSlugSchema } from "../../actors/store/slug.ts";

// the stores table's own format (stores_slug_format): anything else names no store and must not reach SQL as a 500
const Slug = t.Object({ slug: storeSlugSchema() });
const sec = [{ bearer: [] }];
const errs = errorResponses(400, 401, 404);

// The bodies' schemas, each also the route's `strictJsonBody` (a misspelt key is 400 naming it, not dropped: audit W-7).
// Items are `t.Unknown()` (validated one by one, per-item errors); the OpenAPI document describes them with the item
// schemas (gateway/openapi/operations.ts).
export const CatalogBody = t.Object({
  products: t.Array(t.Unknown(), { maxItems: MAX_CATALOG_BATCH, description: "ProductInput items (validated one by one)" }),
  // counted in characters, as an item's externalId is (CodePointString): an id a product was synced with can be removed
  remove: t.Optional(
    t.Array(CodePointString({ minLength: 1, maxLength: 255, pattern: NO_NUL_PATTERN }), {
      maxItems: MAX_CATALOG_BATCH,
      description: "externalIds to take out of the catalog (a product also in products is rejected there, and not removed)",
    }),
  ),
});
export const InventoryBody = t.Object({
  items: t.Array(t.Unknown(), { minItems: 1, maxItems: MAX_CATALOG_BATCH, description: "InventoryItemInput items (validated one by one)" }),
});
// Items are checked one by one in the store actor (HumanOrderInput, then orderFromInput), so a bad status is a
// per-order rejection like a bad price, not a 400 for the whole batch (audit A2 LOW-3).
export const OrdersBody = t.Object({ orders: t.Array(t.Unknown(), { minItems: 1, maxItems: 500, description: "HumanOrderInput items (validated one by one)" }) });
const ShippingZonesBody = t.Object({ zones: t.Array(ShippingZoneInput, { maxItems: 100 }) });

/** PATCH /inventory items split into schema-valid ones (with their batch index) and per-item rejections. */
export function splitInventoryItems(items: readonly unknown[]): { valid: { index: number; item: InventoryItemInput }[]; rejected: RejectedItem[] } {
  const valid: { index: number; item: InventoryItemInput }[] = [];
  const rejected: RejectedItem[] = [];
  items.forEach((raw, index) => {
    const externalId = raw && typeof raw === "object" && typeof (raw as { externalId?: unknown }).externalId === "string" ? (raw as { externalId: string }).externalId : null;
    const errors = schemaErrors(InventoryItemInput, raw, 10);
    const unstorable = errors.length ? null : unstorableField(raw);
    if (unstorable) errors.push(unstorable);
    if (errors.length) rejected.push({ index, externalId: externalId && !unstorableField(externalId) ? externalId : null, errors });
    else valid.push({ index, item: raw as InventoryItemInput });
  });
  return { valid, rejected };
}

export function merchantApiRoutes(svc: Services) {
  return new Elysia({ name: "merchant-api-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/merchant/stores/:slug/catalog",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        // in parts under the actor bus's message size when large (ingest-parts.ts), answered as one batch
        const r = await ingestCatalogInParts(svc.actors, params.slug, body.products, body.remove);
        return ok(r);
      },
      {
        params: Slug,
        ...strictJsonBody(CatalogBody),
        response: errs,
        detail: { tags: ["merchant"], summary: "Batch upsert up to 1,000 products (per-item errors)", security: sec },
      },
    )
    .patch(
      "/api/v1/merchant/stores/:slug/inventory",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        // Items are checked one by one here (docs/decisions.md: per-item results, 400 only for a malformed envelope),
        // so one unstorable item (stock >= 2^31, a NUL byte) is rejected on its own and the rest is still written.
        const { valid, rejected } = splitInventoryItems(body.items);
        if (valid.length === 0) return ok({ updated: 0, products: 0, rejected });
        const r = await svc.actors.ask(storeActor, params.slug, "setInventory", { items: valid.map((v) => v.item) });
        const merged = [...rejected, ...r.rejected.map((x) => ({ ...x, index: valid[x.index]!.index }))].sort((a, b) => a.index - b.index);
        return ok({ updated: body.items.length - merged.length, products: r.products, rejected: merged });
      },
      {
        params: Slug,
        ...strictJsonBody(InventoryBody),
        response: errs,
        detail: { tags: ["merchant"], summary: "Set stock by product or variant", security: sec },
      },
    )
    .post(
      "/api/v1/merchant/stores/:slug/orders",
      async ({ params, body, user, set }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const r = await recordOrdersInParts(svc.actors, params.slug, body.orders);
        set.status = 201;
        return ok(r);
      },
      {
        params: Slug,
        ...strictJsonBody(OrdersBody),
        response: { 201: t.Any(), ...errs },
        detail: { tags: ["merchant"], summary: "Record human orders (idempotent per externalId; the trust engine's input)", security: sec },
      },
    )
    .get(
      "/api/v1/merchant/stores/:slug/policies",
      async ({ params, user }) => ok(declaredPolicies(await assertStoreWriter(svc.sql, params.slug, user))),
      { params: Slug, response: errs, detail: { tags: ["merchant"], summary: "The store's policies and negotiation rules, as PUT takes them", security: sec } },
    )
    .put(
      "/api/v1/merchant/stores/:slug/policies",
      async ({ params, body, user }) => {
        const store = await assertStoreWriter(svc.sql, params.slug, user);
        const r = await svc.actors.ask(storeActor, params.slug, "setPolicies", { policies: body });
        // the answer shows the policies as agents now read them: the shipping promises are the zones' (agentPolicies)
        const shown = policiesView((await findStore(svc.sql, store.slug))?.policies ?? r.policies, store.currency);
        const notes = (["freeShippingThreshold", "shippingEstimateDays"] as const)
          .filter((k) => body[k] !== undefined && body[k] !== shown[k])
          .map((k) => `${k}: agents are shown ${shown[k] === undefined ? "none" : JSON.stringify(shown[k])}, what carts charge by your shipping zones (docs/catalog.md); change the zones to change it`);
        return ok({ policies: shown, policyVersion: r.policyVersion, negotiation: r.negotiation, ...(notes.length ? { notes } : {}) });
      },
      { params: Slug, ...strictJsonBody(PoliciesInput), response: errs, detail: { tags: ["merchant"], summary: "Replace the store's policies (and negotiation rules)", security: sec } },
    )
    .get(
      "/api/v1/merchant/stores/:slug/shipping-zones",
      async ({ params, user }) => {
        const store = await assertStoreWriter(svc.sql, params.slug, user);
        return ok(await declaredShippingZones(svc.sql, store.slug));
      },
      { params: Slug, response: errs, detail: { tags: ["merchant"], summary: "The store's shipping zones, as PUT takes them", security: sec } },
    )
    .put(
      "/api/v1/merchant/stores/:slug/shipping-zones",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const r = await svc.actors.ask(storeActor, params.slug, "setShippingZones", { zones: body.zones });
        return ok({ zones: r.zones, currencyNote: "amounts are decimals in each zone's currency", example: body.zones[0] ? toMajor(0, body.zones[0].currency) : null });
      },
      {
        params: Slug,
        ...strictJsonBody(ShippingZonesBody),
        response: errs,
        detail: { tags: ["merchant"], summary: "Replace the store's shipping zones", security: sec },
      },
    );
}
