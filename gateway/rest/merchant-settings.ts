/**
 * Store settings over REST under /api/v1/merchant/stores/{slug} (the same `store/<slug>` messages the dashboard's
 * settings page sends, actors/store/settings.ts). Bearer JWT of the store's owner or an operator; anyone else gets
 * 404 store_not_found.
 *
 * PUT    /mcp-tools        {enabled: string[] | null}   null = every tool; names must be MCP registry tools
 * PUT    /payment-methods  {methods: ("card"|"x402"|"MOCK")[]}   MOCK can be kept, never added
 * GET    /coupons                                       every coupon, active or not
 * POST   /coupons          {code, kind, value, minSpend?, expiresAt?, usageLimit?}   create or replace (201 / 200);
 *                          omitted expiresAt / usageLimit = none (a replace clears them)
 * DELETE /coupons/{code}                                deactivates (orders keep naming it; POST again revives it)
 *
 * Money at the edge: a fixed coupon's `value` and `minSpend` are decimals in the store's currency; a percent
 * coupon's `value` is a whole percentage 1..100.
 */
import { Elysia, t } from "elysia";
import { storeActor } from "../../actors/store/index.ts";
import { listCoupons, type StoreCoupon } from "../../actors/store/merchant-reads.ts";
import { assertStoreWriter } from "../../actors/store/reads.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { couponFromInput, MAX_USAGE_LIMIT, PAYMENT_RAILS } from "../../actors/store/settings.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { ALL_TOOLS } from "../mcp/tools/index.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth } from "../plugins/auth.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import { strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";
import type { Services } from "../services.ts";
import { storeSlugSchema } from "../../actors/store/slug.ts";

const Slug = t.Object({ slug: storeSlugSchema() });
// A NUL in the code reached Postgres and came back as a field-less 400 (audit W-5): refused here, naming `code`.
const SlugCode = t.Object({ slug: storeSlugSchema(), code: t.String({ minLength: 1, maxLength: 64, pattern: NO_NUL_PATTERN }) });
const sec = [{ bearer: [] }];
const errs = errorResponses(400, 401, 404);

// The bodies' schemas, each also the route's `strictJsonBody`: a misspelt key (`usageLimt`) is 400 naming it; it was
// dropped and the coupon stored without a usage limit (audit W-7).
const McpToolsBody = t.Object({
  enabled: t.Union([t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 200 }), t.Null()], {
    description: "MCP tool names this store serves; null = every tool, [] = none",
  }),
});
const PaymentMethodsBody = t.Object({
  methods: t.Array(t.Union(PAYMENT_RAILS.map((r) => t.Literal(r))), { maxItems: 3, description: "card, x402; MOCK only where it already is" }),
});
const CouponBody = t.Object({
  code: t.String({ pattern: "^[A-Za-z0-9_-]{2,64}$", description: "Stored upper case" }),
  kind: t.Union([t.Literal("percent"), t.Literal("fixed")]),
  value: t.Number({ exclusiveMinimum: 0, description: "percent: 1..100; fixed: decimal amount in the store's currency" }),
  minSpend: t.Optional(t.Number({ minimum: 0, description: "Decimal, store currency; inclusive" })),
  expiresAt: t.Optional(t.String({ format: "date-time", description: "Omit for no expiry; a year 0001..9999 written with four digits (no expanded year such as +010000)" })),
  usageLimit: t.Optional(t.Integer({ minimum: 0, maximum: MAX_USAGE_LIMIT, description: "Omit for unlimited" })),
});

/** The tool names a store may enable: the MCP registry's, never a copy of them. */
export function unknownToolNames(names: readonly string[]): string[] {
  const known = new Set(ALL_TOOLS.map((tool) => tool.name));
  return names.filter((n) => !known.has(n));
}

function couponView(c: StoreCoupon, storeCurrency: string) {
  const currency = c.currency ?? storeCurrency;
  return {
    ...c,
    value: c.kind === "fixed" ? toMajor(c.value, currency) : c.value,
    valueMinor: c.kind === "fixed" ? c.value : null,
    minSpend: toMajor(c.minSpendMinor, storeCurrency),
  };
}

export function merchantSettingsRoutes(svc: Services) {
  return new Elysia({ name: "merchant-settings-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/merchant/stores/:slug/mcp-tools",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        if (body.enabled !== null) {
          const unknown = unknownToolNames(body.enabled);
          if (unknown.length) throw fail("validation_error", `Unknown MCP tool: ${unknown[0]}.`, { field: "enabled", unknown });
        }
        const r = await svc.actors.ask(storeActor, params.slug, "setEnabledMcpTools", { tools: body.enabled });
        return ok({ enabled: r.enabledMcpTools });
      },
      {
        params: Slug,
        ...strictJsonBody(McpToolsBody),
        response: errs,
        detail: { tags: ["merchant"], summary: "Choose the MCP tools the store serves", security: sec },
      },
    )
    .put(
      "/api/v1/merchant/stores/:slug/payment-methods",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const r = await svc.actors.ask(storeActor, params.slug, "setPaymentMethods", { methods: body.methods });
        return ok({ methods: r.paymentMethods });
      },
      {
        params: Slug,
        ...strictJsonBody(PaymentMethodsBody),
        response: errs,
        detail: { tags: ["merchant"], summary: "Choose the payment rails the store offers", security: sec },
      },
    )
    .get(
      "/api/v1/merchant/stores/:slug/coupons",
      async ({ params, user }) => {
        const store = await assertStoreWriter(svc.sql, params.slug, user);
        return ok((await listCoupons(svc.sql, store.slug)).map((c) => couponView(c, store.currency)));
      },
      { params: Slug, response: errs, detail: { tags: ["merchant"], summary: "List the store's coupons", security: sec } },
    )
    .post(
      "/api/v1/merchant/stores/:slug/coupons",
      async ({ params, body, user, set }) => {
        const store = await assertStoreWriter(svc.sql, params.slug, user);
        const r = await svc.actors.ask(storeActor, store.slug, "upsertCoupon", couponFromInput(body, store.currency));
        const coupon = (await listCoupons(svc.sql, store.slug)).find((c) => c.code === r.code)!;
        set.status = r.created ? 201 : 200;
        return ok(couponView(coupon, store.currency));
      },
      {
        params: Slug,
        ...strictJsonBody(CouponBody),
        response: { 201: t.Any(), ...errs },
        detail: { tags: ["merchant"], summary: "Create or replace a coupon (201 created, 200 replaced)", security: sec },
      },
    )
    .delete(
      "/api/v1/merchant/stores/:slug/coupons/:code",
      async ({ params, user }) => {
        const store = await assertStoreWriter(svc.sql, params.slug, user);
        const r = await svc.actors.ask(storeActor, store.slug, "setCouponActive", { code: params.code, active: false });
        return ok(r);
      },
      { params: SlugCode, ...noBody(), response: errs, detail: { tags: ["merchant"], summary: "Deactivate a coupon", security: sec } },
    );
}
