import { describe, expect, test } from "bun:test";
import {
  agentPolicies,
  assignVariantIds,
  effectiveInStock,
  imageUrlProblem,
  impossibleDateTime,
  fitsCurrency,
  orderFromInput,
  policiesFromInput,
  policiesView,
  rollUpVariants,
  unstorableField,
  validateCatalogItems,
  zonesFromInput,
  type HumanOrderInput,
  type ShippingZoneInput,
  type VariantStock,
} from "../../actors/store/ingest.ts";
import { useCompiledFormats } from "../../gateway/plugins/schema-formats.ts";

// the formats the gateway registers at boot (variant ids are `format: "uuid"`)
useCompiledFormats();

const good = (over: Record<string, unknown> = {}) => ({ externalId: "sku-1", title: "Kettle", price: 19.99, currency: "USD", ...over });
const fieldsOf = (r: { errors: { field: string }[] }) => r.errors.map((e) => e.field);

describe("fitsCurrency", () => {
  const cases: [number, string, boolean][] = [
    [19.99, "USD", true],
    [19.999, "USD", false],
    [0.29, "USD", true], // 0.29 × 100 is 28.999999999999996 in binary
    [1500, "JPY", true],
    [10.5, "JPY", false],
    [1.234, "BHD", true],
    [1.2345, "BHD", false],
    [1e-9, "USD", false], // a tolerance absolute in minor units let this through as 0
    [5.000000001, "USD", false],
    [0.1 + 0.2, "USD", true], // binary noise only
    [9_999_999_999.99, "USD", true],
  ];
  for (const [major, currency, fits] of cases) {
    test(`${major} ${currency} ${fits ? "fits" : "has more decimals than"} the currency`, () => expect(fitsCurrency(major, currency)).toBe(fits));
  }
});

describe("validating one catalog item", () => {
  const rejectedCases: { name: string; item: unknown; fields: string[] }[] = [
    { name: "null is rejected as not an object", item: null, fields: ["(item)"] },
    { name: "an array is rejected as not an object", item: [good()], fields: ["(item)"] },
    { name: "a string is rejected as not an object", item: "sku-1", fields: ["(item)"] },
    { name: "a missing title is rejected on title, once", item: { externalId: "sku-1", price: 1, currency: "USD" }, fields: ["title"] },
    { name: "an empty externalId is rejected on externalId", item: good({ externalId: "" }), fields: ["externalId"] },
    { name: "a negative price is rejected on price", item: good({ price: -1 }), fields: ["price"] },
    { name: "a lower-case currency is rejected on currency", item: good({ currency: "usd" }), fields: ["currency"] },
    { name: "an unknown property is rejected by its name", item: good({ colour: "red" }), fields: ["colour"] },
    { name: "a USD price with three decimals is rejected on price", item: good({ price: 19.999 }), fields: ["price"] },
    { name: "a JPY price with decimals is rejected on price", item: good({ price: 10.5, currency: "JPY" }), fields: ["price"] },
    { name: "a compareAtPrice below the price is rejected on compareAtPrice", item: good({ compareAtPrice: 19.98 }), fields: ["compareAtPrice"] },
    { name: "a compareAtPrice with too many decimals is rejected on compareAtPrice", item: good({ compareAtPrice: 25.001 }), fields: ["compareAtPrice"] },
    { name: "a variant price with too many decimals is rejected on that variant", item: good({ variants: [{ title: "S" }, { title: "M", price: 1.001 }] }), fields: ["variants.1.price"] },
    { name: "every broken rule of an item is reported, not just the first", item: good({ price: 10.001, compareAtPrice: 5, variants: [{ title: "S", price: 0.001 }] }), fields: ["price", "compareAtPrice", "variants.0.price"] },
  ];
  for (const c of rejectedCases) {
    test(c.name, () => {
      const { valid, rejected } = validateCatalogItems([c.item]);
      expect(valid).toEqual([]);
      expect(rejected).toHaveLength(1);
      expect(rejected[0]!.index).toBe(0);
      expect(fieldsOf(rejected[0]!)).toEqual(c.fields);
    });
  }

  const acceptedCases: { name: string; item: Record<string, unknown>; priceMinor: number; compareAtPriceMinor: number | null }[] = [
    { name: "a compareAtPrice equal to the price is accepted", item: good({ compareAtPrice: 19.99 }), priceMinor: 1999, compareAtPriceMinor: 1999 },
    { name: "a null compareAtPrice is accepted as none", item: good({ compareAtPrice: null }), priceMinor: 1999, compareAtPriceMinor: null },
    { name: "a whole JPY price is accepted in yen", item: good({ price: 1500, currency: "JPY" }), priceMinor: 1500, compareAtPriceMinor: null },
    { name: "a BHD price with three decimals is accepted in fils", item: good({ price: 1.234, currency: "BHD" }), priceMinor: 1234, compareAtPriceMinor: null },
    { name: "a price of zero is accepted", item: good({ price: 0 }), priceMinor: 0, compareAtPriceMinor: null },
  ];
  for (const c of acceptedCases) {
    test(c.name, () => {
      const { valid, rejected } = validateCatalogItems([c.item]);
      expect(rejected).toEqual([]);
      expect({ priceMinor: valid[0]!.fields.priceMinor, compareAtPriceMinor: valid[0]!.fields.compareAtPriceMinor }).toEqual({
        priceMinor: c.priceMinor,
        compareAtPriceMinor: c.compareAtPriceMinor,
      });
    });
  }

  test("an accepted item is converted to record fields with defaults", () => {
    const { valid } = validateCatalogItems([good({ variants: [{ title: "S", price: 21.5, stockQuantity: 3 }, { title: "M" }] })]);
    expect(valid[0]!.fields).toMatchObject({
      externalId: "sku-1",
      description: "",
      category: null,
      tags: [],
      // the roll-up of the variants: one is untracked, so the product is untracked and in stock
      stockQuantity: null,
      inStock: true,
      active: true,
      variants: [
        { title: "S", options: {}, priceMinor: 2150, stockQuantity: 3, inStock: true },
        { title: "M", options: {}, priceMinor: null, stockQuantity: null, inStock: true },
      ],
    });
  });
});

describe("validating a batch", () => {
  test("rejected items keep their own index and externalId, accepted ones theirs", () => {
    const { valid, rejected } = validateCatalogItems([good({ externalId: "a" }), good({ externalId: "b", price: -1 }), good({ externalId: "c" }), 42]);
    expect(valid.map((v) => [v.index, v.fields.externalId])).toEqual([[0, "a"], [2, "c"]]);
    expect(rejected.map((r) => [r.index, r.externalId])).toEqual([[1, "b"], [3, null]]);
  });

  test("an externalId repeated in one batch is rejected after its first occurrence, at the repeat's index", () => {
    const { valid, rejected } = validateCatalogItems([good({ externalId: "a" }), good({ externalId: "b" }), good({ externalId: "a", title: "Again" })]);
    expect(valid.map((v) => v.index)).toEqual([0, 1]);
    expect(valid[0]!.fields.title).toBe("Kettle");
    expect(rejected).toEqual([{ index: 2, externalId: "a", errors: [{ field: "externalId", message: "repeated in this batch" }] }]);
  });

  test("a repeat that is also invalid reports its schema errors", () => {
    const { rejected } = validateCatalogItems([good({ externalId: "a" }), good({ externalId: "a", price: -1 })]);
    expect(rejected.map((r) => [r.index, fieldsOf(r)])).toEqual([[1, ["price"]]]);
  });

  test("nothing of a rejected item is kept: its externalId does not block a later valid item", () => {
    const { valid, rejected } = validateCatalogItems([good({ externalId: "a", price: 1.001 }), good({ externalId: "a", title: "Fixed" })]);
    expect(rejected.map((r) => r.index)).toEqual([0]);
    expect(valid.map((v) => [v.index, v.fields.title, v.fields.priceMinor])).toEqual([[1, "Fixed", 1999]]);
  });

  test("an empty batch accepts and rejects nothing", () => {
    expect(validateCatalogItems([])).toEqual({ valid: [], rejected: [], removable: [] });
  });
});

describe("inStock when not given", () => {
  const cases: [string, number | null, boolean | undefined, boolean][] = [
    ["tracked stock above zero is in stock", 1, undefined, true],
    ["tracked stock of zero is out of stock", 0, undefined, false],
    ["untracked stock is in stock", null, undefined, true],
    ["an explicit false wins over positive stock", 5, false, false],
    // audit A2-F14: search and availability listed it in stock, the cart refused it
    ["an explicit true does not make zero tracked stock in stock", 0, true, false],
  ];
  for (const [name, qty, flag, expected] of cases) test(name, () => expect(effectiveInStock(qty, flag)).toBe(expected));
});

describe("rolling variant stock up into the product", () => {
  const v = (stockQuantity: number | null, inStock: boolean): VariantStock => ({ id: crypto.randomUUID(), stockQuantity, inStock });
  const cases: { name: string; variants: VariantStock[]; stockQuantity: number | null; inStock: boolean }[] = [
    { name: "tracked variants sum their stock", variants: [v(3, true), v(4, true)], stockQuantity: 7, inStock: true },
    { name: "the product is in stock when any variant is", variants: [v(0, false), v(2, true)], stockQuantity: 2, inStock: true },
    { name: "the product is out of stock when no variant is", variants: [v(0, false), v(0, false)], stockQuantity: 0, inStock: false },
    { name: "a variant flagged out of stock still counts its units", variants: [v(5, false), v(1, true)], stockQuantity: 6, inStock: true },
    { name: "one untracked variant makes the product untracked", variants: [v(3, true), v(null, true)], stockQuantity: null, inStock: true },
    { name: "no variants leaves the product untracked and in stock", variants: [], stockQuantity: null, inStock: true },
  ];
  for (const c of cases) {
    test(c.name, () => expect(rollUpVariants(c.variants)).toEqual({ stockQuantity: c.stockQuantity, inStock: c.inStock }));
  }
});

describe("policies between the API and the record", () => {
  test("a decimal free-shipping threshold is stored in minor units and shown back as a decimal", () => {
    const p = policiesFromInput({ acceptsReturns: true, returnWindowDays: 30, freeShippingThreshold: 49.99, restockingFeePercent: 10 }, "EUR");
    expect(p).toEqual({ acceptsReturns: true, returnWindowDays: 30, freeShippingThresholdMinor: 4999, restockingFeePercent: 10 });
    expect(policiesView(p, "EUR")).toEqual({ acceptsReturns: true, returnWindowDays: 30, freeShippingThreshold: 49.99, restockingFeePercent: 10 });
  });

  test("a threshold in a zero-decimal currency is stored as is", () => {
    expect(policiesFromInput({ acceptsReturns: false, freeShippingThreshold: 5000 }, "JPY").freeShippingThresholdMinor).toBe(5000);
  });

  test("fields not given are absent, not zero", () => {
    expect(policiesFromInput({ acceptsReturns: false }, "EUR")).toEqual({ acceptsReturns: false });
  });
});

describe("shipping zones from the API", () => {
  const z = (over: Partial<ShippingZoneInput> = {}): ShippingZoneInput => ({ name: "DE", countries: ["DE"], currency: "EUR", base: 4.9, minDays: 1, maxDays: 3, ...over });
  const errorCases: { name: string; zones: ShippingZoneInput[]; fields: string[] }[] = [
    { name: "maxDays below minDays is an error on that zone", zones: [z(), z({ name: "AT", minDays: 4, maxDays: 3 })], fields: ["zones.1.maxDays"] },
    { name: "maxDays equal to minDays is fine", zones: [z({ minDays: 3, maxDays: 3 })], fields: [] },
    { name: "a repeated zone name is an error on the repeat", zones: [z(), z()], fields: ["zones.1.name"] },
    { name: "money with too many decimals is an error per field", zones: [z({ base: 4.999, perItem: 0.001, freeOver: 50.5 })], fields: ["zones.0.base", "zones.0.perItem"] },
    { name: "a JPY base with decimals is an error", zones: [z({ currency: "JPY", base: 500.5 })], fields: ["zones.0.base"] },
  ];
  for (const c of errorCases) test(c.name, () => expect(zonesFromInput(c.zones).errors.map((e) => e.field)).toEqual(c.fields));

  test("amounts become minor units, prefixes are normalised and countries de-duplicated", () => {
    const { zones } = zonesFromInput([z({ countries: ["DE", "DE", "AT"], postalPrefixes: ["sw1 a", "10"], perItem: 1, freeOver: 50 })]);
    expect(zones[0]).toEqual({
      name: "DE",
      countries: ["DE", "AT"],
      postalPrefixes: ["SW1A", "10"],
      currency: "EUR",
      baseMinor: 490,
      perItemMinor: 100,
      freeOverMinor: 5000,
      minDays: 1,
      maxDays: 3,
    });
  });

  test("no per-item price is zero and no free-over is never free", () => {
    expect(zonesFromInput([z({ freeOver: null })]).zones[0]).toMatchObject({ perItemMinor: 0, freeOverMinor: null });
  });
});

describe("human orders from the API", () => {
  const hash = (b: string) => `h(${b})`;
  const NOW = Date.parse("2026-06-01T12:00:00Z");
  const o = (over: Partial<HumanOrderInput> = {}): HumanOrderInput => ({
    externalId: "o-1",
    buyer: "  Ann@Example.COM ",
    status: "paid",
    currency: "USD",
    items: [{ externalId: "sku-1", quantity: 2, unitPrice: 19.99 }, { title: "Gift wrap", quantity: 1, unitPrice: 0.5 }],
    ...over,
  });

  test("the total defaults to the sum of the items", () => {
    expect(orderFromInput(o(), hash, NOW).order?.totalMinor).toBe(4048);
  });

  test("a given total is kept even when it differs from the items (shipping, discounts)", () => {
    expect(orderFromInput(o({ total: 45 }), hash, NOW).order?.totalMinor).toBe(4500);
  });

  test("the buyer is stored only as the hash of the trimmed, lower-cased value", () => {
    expect(orderFromInput(o(), hash, NOW).order?.buyerRef).toBe("h(ann@example.com)");
  });

  test("defaults: nothing refunded, not disputed, on-time unknown, no creation time", () => {
    expect(orderFromInput(o(), hash, NOW).order).toMatchObject({ refundedMinor: 0, disputed: false, fulfilledOnTime: null, createdAt: null });
  });

  const errorCases: { name: string; order: HumanOrderInput; fields: string[] }[] = [
    { name: "a refund equal to the total is fine", order: o({ total: 10, refunded: 10 }), fields: [] },
    { name: "a refund above the total is an error", order: o({ total: 10, refunded: 10.01 }), fields: ["refunded"] },
    { name: "an item with no externalId, productId or title is an error at its index", order: o({ items: [{ title: "x", quantity: 1, unitPrice: 1 }, { quantity: 1, unitPrice: 1 }] }), fields: ["items.1"] },
    { name: "a unit price with too many decimals is an error at its index", order: o({ items: [{ title: "x", quantity: 1, unitPrice: 1.005 }] }), fields: ["items.0.unitPrice"] },
    { name: "an order dated within the clock-skew allowance is fine", order: o({ createdAt: "2026-06-01T12:04:00Z" }), fields: [] },
    { name: "an order dated beyond the clock-skew allowance is an error", order: o({ createdAt: "2026-06-01T12:06:00Z" }), fields: ["createdAt"] },
    { name: "an order dated in 2099 is an error", order: o({ createdAt: "2099-01-01T00:00:00Z" }), fields: ["createdAt"] },
    { name: "an item title with a lone surrogate is an error at its path", order: o({ items: [{ title: "Bad \ud800 wrap", quantity: 1, unitPrice: 1 }] }), fields: ["items.0.title"] },
  ];
  for (const c of errorCases) {
    test(c.name, () => {
      const r = orderFromInput(c.order, hash, NOW);
      expect(r.errors.map((e) => e.field)).toEqual(c.fields);
      expect(r.order === undefined).toBe(c.fields.length > 0);
    });
  }
});

describe("strings Postgres cannot store", () => {
  const cases: [string, unknown, string | null][] = [
    ["a lone high surrogate in a value", { title: "Bad \ud800 item" }, "title"],
    ["a lone low surrogate in a value", { tags: ["ok", "x\udc00"] }, "tags.1"],
    ["a high surrogate at the end of a value", { description: "end\ud83d" }, "description"],
    ["a lone surrogate in a key", { attributes: { "k\udfff": "v" } }, "attributes.k\udfff"],
    ["a NUL byte in a nested value", { variants: [{ options: { size: "L\u0000" } }] }, "variants.0.options.size"],
    ["a proper surrogate pair (emoji) is fine", { title: "Mug \ud83d\ude00" }, null],
    ["plain text, numbers and nulls are fine", { title: "clean", n: 1, b: null }, null],
  ];
  for (const [name, value, field] of cases) test(name, () => expect(unstorableField(value)?.field ?? null).toBe(field));

  test("a catalog item with a lone surrogate is rejected on its own, naming the field", () => {
    const r = validateCatalogItems([good({ externalId: "a", title: "Bad \ud800 item" }), good({ externalId: "b" })]);
    expect(r.rejected.map((x) => [x.index, fieldsOf(x)])).toEqual([[0, ["title"]]]);
    expect(r.valid.map((v) => v.index)).toEqual([1]);
  });
});

describe("catalog items with variants", () => {
  const variant = (over: Record<string, unknown> = {}) => ({ title: "M", ...over });

  test("the product's stock is the roll-up of its variants: all at zero is out of stock", () => {
    const r = validateCatalogItems([good({ variants: [variant({ title: "S", stockQuantity: 0 }), variant({ stockQuantity: 0 })] })]);
    expect(r.valid[0]!.fields).toMatchObject({ stockQuantity: 0, inStock: false });
  });

  test("tracked variants sum their stock into the product", () => {
    const r = validateCatalogItems([good({ variants: [variant({ title: "S", stockQuantity: 5 }), variant({ stockQuantity: 7 })] })]);
    expect(r.valid[0]!.fields).toMatchObject({ stockQuantity: 12, inStock: true });
  });

  test("a product-level stock that agrees with the variants is accepted; one that does not is rejected", () => {
    const vs = [variant({ title: "S", stockQuantity: 5 }), variant({ stockQuantity: 7 })];
    const r = validateCatalogItems([good({ externalId: "a", stockQuantity: 12, variants: vs }), good({ externalId: "b", stockQuantity: 3, variants: vs }), good({ externalId: "c", inStock: false, variants: vs })]);
    expect(r.valid.map((v) => v.fields.externalId)).toEqual(["a"]);
    expect(r.rejected.map((x) => fieldsOf(x))).toEqual([["stockQuantity"], ["inStock"]]);
  });

  test("repeated variant ids, repeated skus and indistinguishable variants are rejected, naming the repeat", () => {
    const id = crypto.randomUUID();
    const r = validateCatalogItems([
      good({ externalId: "ids", variants: [variant({ id, title: "S" }), variant({ id: id.toUpperCase() })] }),
      good({ externalId: "skus", variants: [variant({ sku: "X", title: "S" }), variant({ sku: "X" })] }),
      good({ externalId: "looks", variants: [variant({ options: { color: "red" } }), variant({ options: { color: "red" } })] }),
      good({ externalId: "ok", variants: [variant({ options: { color: "red" } }), variant({ options: { color: "blue" } })] }),
    ]);
    expect(r.rejected.map((x) => [x.externalId, fieldsOf(x)])).toEqual([
      ["ids", ["variants.1.id"]],
      ["skus", ["variants.1.sku"]],
      ["looks", ["variants.1"]],
    ]);
    expect(r.valid.map((v) => v.fields.externalId)).toEqual(["ok"]);
  });
});

describe("variant identity across syncs", () => {
  const stored = (id: string, title: string, options: Record<string, string>, sku?: string) => ({
    id, title, options, ...(sku ? { sku } : {}), priceMinor: null, stockQuantity: 1, inStock: true,
  });
  const incoming = (title: string, options: Record<string, string>, extra: { id?: string; sku?: string } = {}) => ({
    ...extra, title, options, priceMinor: null, stockQuantity: 1, inStock: true,
  });

  test("two variants with the same title keep their own ids (matched by title and options)", () => {
    const prev = [stored("id-red", "M", { color: "red" }), stored("id-blue", "M", { color: "blue" })];
    const out = assignVariantIds([incoming("M", { color: "red" }), incoming("M", { color: "blue" })], prev);
    expect(out.map((v) => v.id)).toEqual(["id-red", "id-blue"]);
  });

  test("a sku keeps its id when the title changes, and a stored id is never handed out twice", () => {
    const prev = [stored("id-a", "Small", {}, "SKU-A"), stored("dup", "M", {}), stored("dup", "M", {})];
    const out = assignVariantIds([incoming("S", {}, { sku: "SKU-A" }), incoming("M", {}), incoming("M", { fit: "slim" })], prev);
    expect(out[0]!.id).toBe("id-a");
    expect(out[1]!.id).toBe("dup");
    expect(out[2]!.id).not.toBe("dup");
  });

  test("of stored variants sharing an id, only the first one (the one carts resolve) keeps it, whatever the feed's order", () => {
    // rows the old title-only rule wrote: both sizes under one id, which a cart resolves to the first (size S)
    const prev = [stored("u2", "Shirt", { size: "S" }), stored("u2", "Shirt", { size: "M" })];
    const out = assignVariantIds([incoming("Shirt", { size: "M" }), incoming("Shirt", { size: "S" })], prev);
    expect(out[1]!.id).toBe("u2");
    expect(out[0]!.id).not.toBe("u2");
    const inOrder = assignVariantIds([incoming("Shirt", { size: "S" }), incoming("Shirt", { size: "M" })], prev);
    expect(inOrder[0]!.id).toBe("u2");
    expect(inOrder[1]!.id).not.toBe("u2");
  });

  test("the merchant's own id wins and is not given to another variant", () => {
    const prev = [stored("id-1", "M", {})];
    const out = assignVariantIds([incoming("M", {}), incoming("L", {}, { id: "id-1" })], prev);
    expect(out[1]!.id).toBe("id-1");
    expect(out[0]!.id).not.toBe("id-1");
  });
});

describe("the shipping promises agents are shown (agentPolicies, audit A2-F12)", () => {
  const stated = { acceptsReturns: true, returnWindowDays: 30, freeShippingThresholdMinor: 1000, shippingEstimateDays: "1-2", supportResponseTimeSla: "24h" };
  test("a domestic zone decides both: its freeOver and its day window", () => {
    expect(agentPolicies(stated, { zones: 3, domestic: { name: "Home", freeOverMinor: 6000, minDays: 3, maxDays: 5 } })).toEqual({ ...stated, freeShippingThresholdMinor: 6000, shippingEstimateDays: "3-5" });
  });
  test("a domestic zone without freeOver shows no threshold (never free); a one-day window is one number", () => {
    const { freeShippingThresholdMinor: _, ...rest } = stated;
    expect(agentPolicies(stated, { zones: 1, domestic: { name: "Home", freeOverMinor: null, minDays: 2, maxDays: 2 } })).toEqual({ ...rest, shippingEstimateDays: "2" });
  });
  test("no zones at all: free shipping (threshold 0) and the merchant's estimate", () => {
    expect(agentPolicies(stated, { zones: 0, domestic: null })).toEqual({ ...stated, freeShippingThresholdMinor: 0 });
  });
  test("zones but none for the store's own country: neither promise", () => {
    const { freeShippingThresholdMinor: _, shippingEstimateDays: __, ...rest } = stated;
    expect(agentPolicies(stated, { zones: 2, domestic: null })).toEqual(rest);
  });
});

describe("return window of a store without returns (audit A2-F9)", () => {
  test("PUT /policies refuses a window above 0 with acceptsReturns false", () => {
    expect(() => policiesFromInput({ acceptsReturns: false, returnWindowDays: 30 }, "USD")).toThrow("no return window");
    expect(policiesFromInput({ acceptsReturns: false, returnWindowDays: 0 }, "USD")).toEqual({ acceptsReturns: false, returnWindowDays: 0 });
  });
  test("every view shows 0 days for a stored contradiction", () => {
    expect(policiesView({ acceptsReturns: false, returnWindowDays: 30 }, "USD")).toEqual({ acceptsReturns: false, returnWindowDays: 0 });
    expect(policiesView({ acceptsReturns: false }, "USD")).toEqual({ acceptsReturns: false, returnWindowDays: 0 });
  });
});

describe("image URLs and dates (audit A3-7, A3-8)", () => {
  test("only http and https image URLs", () => {
    for (const ok of ["https://a.example/x.jpg", "http://a.example", "HTTPS://A.EXAMPLE/x"]) expect(imageUrlProblem(ok)).toBeNull();
    for (const bad of ["javascript:alert(1)", "file:///etc/passwd", "data:image/png;base64,AA", "https:///x", "ftp://a.example/x"]) expect(imageUrlProblem(bad)).toBe("must be an http or https URL");
  });
  test("a date or time that does not exist is named; real ones (leap days included) pass", () => {
    expect(impossibleDateTime("2027-02-30T00:00:00Z")).toBe("2027-02-30 is not a date in the calendar");
    expect(impossibleDateTime("2027-13-01T00:00:00Z")).toBe("2027-13-01 is not a date in the calendar");
    expect(impossibleDateTime("2027-04-31T00:00")).toBe("2027-04-31 is not a date in the calendar");
    expect(impossibleDateTime("2027-01-01T24:00:00Z")).toBe("24:00:00 is not a time of day");
    for (const ok of ["2028-02-29T00:00:00Z", "2027-12-31T23:59:59.999+02:00", "2027-01-01T00:00"]) expect(impossibleDateTime(ok)).toBeNull();
  });
});

describe("currencies are ISO 4217 (audit A3-7)", () => {
  test("a catalog item, a zone and an order in ZZZ are refused on currency; the exponents are search/money.ts's", () => {
    const r = validateCatalogItems([{ externalId: "z", title: "z", price: 1, currency: "ZZZ" }, { externalId: "x", title: "x", price: 100, currency: "XOF" }]);
    expect(r.rejected).toEqual([{ index: 0, externalId: "z", errors: [{ field: "currency", message: "ZZZ is not an ISO 4217 currency code" }] }]);
    expect(r.valid[0]!.fields.priceMinor).toBe(100); // XOF has no minor unit
    expect(zonesFromInput([{ name: "a", countries: ["US"], currency: "XAU", base: 1, minDays: 1, maxDays: 2 }]).errors).toEqual([{ field: "zones.0.currency", message: "XAU is not an ISO 4217 currency code" }]);
  });
});
