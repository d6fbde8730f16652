import { describe, expect, test } from "bun:test";
import { FormatRegistry } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import {
  Coupon,
  isValidGtin,
  ProductInput,
  productFromRow,
  productInputToFields,
  ProductRecord,
  productToRow,
  ShippingZone,
  StoreRecord,
  toMajor,
  toMinor,
} from "../../actors/store/schemas.ts";
import { buildDemoData, DEMO_SEED, DEMO_STORE_SLUG, demoProductId, SHARED_ITEMS } from "../../infra/seed/demo.ts";
import { mulberry32, stableUuid } from "../../infra/seed/prng.ts";

// Plain TypeBox knows no string formats (Elysia registers them at run time); register the ones these schemas use.
const FORMATS: Record<string, RegExp> = {
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  "date-time": /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
  uri: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
};
for (const [name, re] of Object.entries(FORMATS)) if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, (v) => re.test(v));

const NOW = new Date("2026-03-01T12:00:00.000Z");
const data = buildDemoData(DEMO_SEED, { now: NOW });
const DAY = 86_400_000;
const store = (slug: string) => data.stores.find((s) => s.slug === slug)!;
const productsOf = (slug: string) => data.products.filter((p) => p.storeSlug === slug);
const band = (t: number) => (t >= 0.9 ? "EXCELLENT" : t >= 0.8 ? "GOOD" : t >= 0.7 ? "ACCEPTABLE" : t >= 0.5 ? "CAUTION" : "RESTRICTED");

describe("the demo seed as plain data", () => {
  test("two builds with the same seed and clock are deep-equal", () => {
    expect(buildDemoData(DEMO_SEED, { now: NOW })).toEqual(data);
  });

  test("ids do not depend on the clock, only on the seed", () => {
    const later = buildDemoData(DEMO_SEED, { now: new Date(NOW.getTime() + 37 * DAY) });
    expect(later.products.map((p) => p.id)).toEqual(data.products.map((p) => p.id));
    expect(later.orders.map((o) => o.id)).toEqual(data.orders.map((o) => o.id));
    const other = buildDemoData(DEMO_SEED + 1, { now: NOW });
    expect(other.products[0]!.id).not.toBe(data.products[0]!.id);
  });

  test("product ids are stable name-based uuids that tests can recompute", () => {
    const first = productsOf(DEMO_STORE_SLUG)[0]!;
    expect(first.externalId).toBe("DS-0001");
    expect(first.title).toBe("Auralis Pro ANC Wireless Headphones");
    expect(first.id).toBe(demoProductId(DEMO_STORE_SLUG, "DS-0001"));
    expect(first.id).toBe("1e34ef13-d99e-575f-975a-67ea08dcdf99");
    expect(new Set(data.products.map((p) => p.id)).size).toBe(data.products.length);
    expect(stableUuid("a", 1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test("the PRNG is a pure function of its seed", () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    expect(Array.from({ length: 5 }, a)).toEqual(Array.from({ length: 5 }, b));
  });

  test("every record matches its TypeBox schema", () => {
    for (const s of data.stores) expect(Value.Errors(StoreRecord, s).First()).toBeUndefined();
    for (const p of data.products) expect(Value.Errors(ProductRecord, p).First()).toBeUndefined();
    for (const z of data.shippingZones) expect(Value.Errors(ShippingZone, z).First()).toBeUndefined();
    for (const c of data.coupons) expect(Value.Errors(Coupon, c).First()).toBeUndefined();
  });

  test("the demo store has 200+ products in 5+ categories, MOCK payments, policies, zones, coupons and negotiation", () => {
    const demo = store(DEMO_STORE_SLUG);
    const products = productsOf(DEMO_STORE_SLUG);
    expect(products.length).toBeGreaterThanOrEqual(200);
    expect(new Set(products.map((p) => p.category)).size).toBeGreaterThanOrEqual(5);
    expect(demo.verificationLevel).toBe("STANDARD");
    expect(demo.trustScore!).toBeGreaterThanOrEqual(0.7);
    expect(demo.operationalStatus).toBe("active");
    expect(demo.paymentMethods).toContain("MOCK");
    expect(demo.policies.acceptsReturns).toBe(true);
    expect(demo.negotiationRules?.enabled).toBe(true);
    expect(data.shippingZones.filter((z) => z.storeSlug === DEMO_STORE_SLUG).length).toBeGreaterThanOrEqual(2);
    const codes = data.coupons.filter((c) => c.storeSlug === DEMO_STORE_SLUG).map((c) => c.code);
    expect(codes).toEqual(expect.arrayContaining(["WELCOME10", "FIVEOFF"]));
    expect(data.users.find((u) => u.id === demo.ownerUserId)).toMatchObject({ email: "admin@example.com", role: "operator" });
  });

  test("the named merchants have their exact level, trust and status", () => {
    expect(store("unverified-outlet")).toMatchObject({ verificationLevel: "UNVERIFIED", operationalStatus: "active" });
    expect(store("unverified-outlet").trustScore!).toBeGreaterThanOrEqual(0.7);
    expect(store("lowtrust-bazaar")).toMatchObject({ verificationLevel: "BASIC", trustScore: 0.25, operationalStatus: "hidden" });
    expect(store("suspended-goods")).toMatchObject({ trustScore: 0.1, operationalStatus: "suspended" });
    expect(store("deprioritized-depot")).toMatchObject({ verificationLevel: "BASIC", trustScore: 0.4, operationalStatus: "deprioritized" });
    expect(store("qualified-eu-shop")).toMatchObject({ verificationLevel: "QUALIFIED", euBased: true, currency: "EUR" });
  });

  test("at least ten other merchants cover every verification level and every trust band, each with its own owner", () => {
    const others = data.stores.filter((s) => s.slug !== DEMO_STORE_SLUG);
    expect(others.length).toBeGreaterThanOrEqual(10);
    expect(new Set(data.stores.map((s) => s.verificationLevel))).toEqual(new Set(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM", "QUALIFIED"]));
    const bands = new Set(data.stores.filter((s) => s.trustScore !== null).map((s) => band(s.trustScore!)));
    expect(bands).toEqual(new Set(["RESTRICTED", "CAUTION", "ACCEPTABLE", "GOOD", "EXCELLENT"]));
    expect(new Set(data.stores.map((s) => s.operationalStatus))).toEqual(new Set(["active", "deprioritized", "hidden", "suspended"]));
    for (const s of others) {
      const owner = data.users.find((u) => u.id === s.ownerUserId)!;
      expect(owner.email).toBe(`owner@${s.slug}.example`);
      expect(owner.role).toBe("merchant");
    }
  });

  test("currencies other than USD appear in only two stores, EUR in the EU shop", () => {
    const byCurrency = new Map<string, Set<string>>();
    for (const p of data.products) byCurrency.set(p.currency, (byCurrency.get(p.currency) ?? new Set()).add(p.storeSlug));
    expect(byCurrency.get("EUR")).toEqual(new Set(["qualified-eu-shop"]));
    const nonUsdStores = new Set(data.products.filter((p) => p.currency !== "USD").map((p) => p.storeSlug));
    expect(nonUsdStores.size).toBe(2);
  });

  test("near-duplicate items are sold by several merchants under slightly different titles", () => {
    for (const item of SHARED_ITEMS) {
      const titles = Object.entries(item.titles).map(([slug, title]) => productsOf(slug).find((p) => p.title === title));
      expect(titles.every(Boolean)).toBe(true);
      expect(new Set(titles.map((p) => p!.title)).size).toBe(titles.length);
      expect(titles.length).toBeGreaterThanOrEqual(2);
    }
  });

  test("catalog data looks real: https images, mostly valid GTINs, some missing, some out of stock or untracked", () => {
    const withGtin = data.products.filter((p) => p.gtin);
    const valid = withGtin.filter((p) => isValidGtin(p.gtin!));
    expect(valid.length / withGtin.length).toBeGreaterThan(0.9);
    expect(data.products.some((p) => p.gtin === null)).toBe(true);
    expect(productsOf("lowtrust-bazaar").some((p) => p.gtin && !isValidGtin(p.gtin))).toBe(true);
    expect(data.products.some((p) => !p.inStock)).toBe(true);
    expect(data.products.some((p) => p.stockQuantity === null)).toBe(true);
    for (const p of data.products) for (const img of p.images) expect(img).toStartWith("https://images.example.com/");
    const variants = data.products.flatMap((p) => p.variants);
    expect(variants.length).toBeGreaterThan(100);
    expect(new Set(variants.map((v) => v.id)).size).toBe(variants.length);
    const demo = productsOf(DEMO_STORE_SLUG);
    expect(demo.filter((p) => p.attributes.recycledContentPercent !== undefined).length).toBeGreaterThan(150);
    expect(demo.some((p) => p.compareAtPriceMinor !== null && p.compareAtPriceMinor > p.priceMinor)).toBe(true);
  });

  test("price history covers the last 90 days and ends at the current price", () => {
    const byProduct = new Map<string, typeof data.priceHistory>();
    for (const h of data.priceHistory) byProduct.set(h.productId, [...(byProduct.get(h.productId) ?? []), h]);
    expect(byProduct.size).toBe(data.products.length);
    for (const p of data.products) {
      const points = byProduct.get(p.id)!;
      const last = points[points.length - 1]!;
      expect(last.priceMinor).toBe(p.priceMinor);
      for (const h of points) expect(NOW.getTime() - Date.parse(h.recordedAt)).toBeLessThanOrEqual(90 * DAY);
    }
  });

  test("order histories span 180 days with consistent totals, statuses and flags", () => {
    const itemsByOrder = new Map<string, number>();
    for (const i of data.orderItems) itemsByOrder.set(i.orderId, (itemsByOrder.get(i.orderId) ?? 0) + i.quantity * i.unitPriceMinor);
    const eventsByOrder = new Map<string, typeof data.orderEvents>();
    for (const e of data.orderEvents) eventsByOrder.set(e.orderId, [...(eventsByOrder.get(e.orderId) ?? []), e]);
    for (const o of data.orders) {
      const age = NOW.getTime() - Date.parse(o.createdAt);
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThanOrEqual(180 * DAY);
      expect(itemsByOrder.get(o.id)).toBe(o.totalMinor);
      expect(o.refundedMinor).toBeLessThanOrEqual(o.totalMinor);
      const events = eventsByOrder.get(o.id)!;
      expect(events[0]!.type).toBe("created");
      expect(events.filter((e) => e.toStatus).at(-1)!.toStatus).toBe(o.status);
      for (const e of events) expect(Date.parse(e.at)).toBeLessThanOrEqual(NOW.getTime());
      expect(o.channel === "agent" ? o.agentKeyId : null).toBe(o.agentKeyId);
    }
    for (const channel of ["agent", "human"]) expect(data.orders.some((o) => o.channel === channel)).toBe(true);
    expect(data.orders.some((o) => o.disputed)).toBe(true);
    expect(data.orders.some((o) => o.fulfilledOnTime === false)).toBe(true);
  });

  test("the demo store meets the agent_verified floor: 20+ agent orders, 20+ buyers and $10,000 GMV in 90 days", () => {
    const recent = data.orders.filter((o) => o.storeSlug === DEMO_STORE_SLUG && NOW.getTime() - Date.parse(o.createdAt) <= 90 * DAY);
    const agent = recent.filter((o) => o.channel === "agent");
    expect(agent.length).toBeGreaterThanOrEqual(20);
    expect(new Set(agent.map((o) => o.buyerRef)).size).toBeGreaterThanOrEqual(20);
    expect(recent.reduce((s, o) => s + o.totalMinor, 0)).toBeGreaterThanOrEqual(1_000_000);
  });

  test("the struggling merchants have visibly worse histories than the healthy ones", () => {
    const rate = (slug: string, f: (o: (typeof data.orders)[number]) => boolean) => {
      const os = data.orders.filter((o) => o.storeSlug === slug);
      return os.filter(f).length / os.length;
    };
    expect(rate("suspended-goods", (o) => o.disputed)).toBeGreaterThan(rate(DEMO_STORE_SLUG, (o) => o.disputed));
    expect(rate("lowtrust-bazaar", (o) => o.fulfilledOnTime === false)).toBeGreaterThan(rate("northwind-outfitters", (o) => o.fulfilledOnTime === false));
    expect(data.orders.filter((o) => o.storeSlug === "fresh-start-studio").length).toBeLessThan(5);
  });
});

describe("store schemas and mappers", () => {
  test("a product survives the row round trip, with bigint columns read back as strings", () => {
    const p = data.products[3]!;
    const row = { ...productToRow(p), price_minor: String(p.priceMinor) };
    expect(productFromRow(row)).toEqual(p);
  });

  test("ingestion prices in major units become minor units per currency exponent", () => {
    expect(toMinor(19.99, "USD")).toBe(1999);
    expect(toMinor(0.1 + 0.2, "EUR")).toBe(30);
    expect(toMinor(1500, "JPY")).toBe(1500);
    expect(toMajor(1999, "USD")).toBe(19.99);
    const input = { externalId: "A1", title: "Mug", price: 12.5, compareAtPrice: 15, currency: "USD", stockQuantity: 0, variants: [{ title: "Blue", price: 13 }] };
    expect(Value.Check(ProductInput, input)).toBe(true);
    const fields = productInputToFields(input);
    // a product with variants takes its stock from them (audit A2 MED-1): the untracked variant makes it untracked, in stock
    expect(fields).toMatchObject({ priceMinor: 1250, compareAtPriceMinor: 1500, inStock: true, stockQuantity: null, tags: [], active: true });
    expect(fields.variants[0]).toMatchObject({ priceMinor: 1300, inStock: true, stockQuantity: null });
    expect(productInputToFields({ externalId: "B", title: "T", price: 1, currency: "USD" }).inStock).toBe(true);
  });

  test("an ingestion item with an unknown field or a lowercase currency is refused", () => {
    expect(Value.Check(ProductInput, { externalId: "A", title: "T", price: 1, currency: "usd" })).toBe(false);
    expect(Value.Check(ProductInput, { externalId: "A", title: "T", price: 1, currency: "USD", priceMinor: 100 })).toBe(false);
    expect(Value.Check(ProductInput, { externalId: "A", title: "T", price: -1, currency: "USD" })).toBe(false);
  });

  test("GTIN check digits are verified", () => {
    expect(isValidGtin("4006381333931")).toBe(true);
    expect(isValidGtin("4006381333932")).toBe(false);
    expect(isValidGtin("036000291452")).toBe(true);
    expect(isValidGtin("12345")).toBe(false);
  });
});
