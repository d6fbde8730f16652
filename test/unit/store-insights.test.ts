import { describe, expect, test } from "bun:test";
import {
  agentHint,
  compareProducts,
  maxShippingDays,
  priceTrend,
  sustainabilityScore,
  type CompareItem,
  type SustainabilityInput,
  type Trend,
} from "../../actors/store/insights.ts";
import { shippingOptions, zoneQuote } from "../../actors/cart/shipping.ts";
import type { ShippingZone } from "../../actors/store/schemas.ts";

describe("price trend of a window", () => {
  const cases: { name: string; opening: number; current: number; trend: Trend; changePercent: number }[] = [
    { name: "a rise of exactly 2 % is rising", opening: 10_000, current: 10_200, trend: "rising", changePercent: 2 },
    { name: "a rise just under 2 % is stable", opening: 10_000, current: 10_199, trend: "stable", changePercent: 1.99 },
    { name: "a fall of exactly 2 % is falling", opening: 10_000, current: 9800, trend: "falling", changePercent: -2 },
    { name: "a fall just under 2 % is stable", opening: 10_000, current: 9801, trend: "stable", changePercent: -1.99 },
    { name: "an unchanged price is stable at 0 %", opening: 10_000, current: 10_000, trend: "stable", changePercent: 0 },
    { name: "a small-price rise of exactly 2 % is rising too", opening: 50, current: 51, trend: "rising", changePercent: 2 },
    { name: "the change is rounded to two decimals", opening: 3, current: 4, trend: "rising", changePercent: 33.33 },
    { name: "a drop to zero is falling by 100 %", opening: 500, current: 0, trend: "falling", changePercent: -100 },
    { name: "no opening price (zero) is stable rather than an infinite rise", opening: 0, current: 500, trend: "stable", changePercent: 0 },
  ];
  for (const c of cases) {
    test(c.name, () => {
      expect(priceTrend(c.opening, c.current)).toEqual({ trend: c.trend, changePercent: c.changePercent });
    });
  }
});

const zone = (over: Partial<ShippingZone> & Pick<ShippingZone, "name">): ShippingZone => ({
  id: "00000000-0000-4000-8000-000000000000",
  storeSlug: "s",
  countries: ["DE"],
  postalPrefixes: [],
  currency: "EUR",
  baseMinor: 500,
  perItemMinor: 100,
  freeOverMinor: null,
  minDays: 1,
  maxDays: 3,
  ...over,
});

describe("matching a destination to a shipping zone (the zone a shipping estimate quotes)", () => {
  const matchZone = (zs: ShippingZone[], countryCode: string, postalCode: string): ShippingZone | undefined => shippingOptions(zs, { countryCode, postalCode }, "EUR")[0];
  const zones: ShippingZone[] = [
    zone({ name: "Germany" }),
    zone({ name: "Berlin", postalPrefixes: ["10", "101"] }),
    zone({ name: "Postal 1", postalPrefixes: ["1"] }),
    zone({ name: "London", countries: ["GB"], postalPrefixes: ["sw1"] }),
    zone({ name: "Europe", countries: ["FR", "AT"] }),
    zone({ name: "Germany again" }),
  ];
  const cases: { name: string; country: string; postal: string; zone: string | null }[] = [
    { name: "a listed country with no matching prefix gets the country-wide zone", country: "DE", postal: "80331", zone: "Germany" },
    { name: "a matching postal prefix beats the country-wide zone", country: "DE", postal: "12345", zone: "Postal 1" },
    { name: "the longest matching prefix wins", country: "DE", postal: "10115", zone: "Berlin" },
    { name: "a shorter prefix of the same zone still matches", country: "DE", postal: "10243", zone: "Berlin" },
    { name: "the country code matches whatever its case", country: "de", postal: "80331", zone: "Germany" },
    { name: "postal codes match ignoring case and spaces", country: "GB", postal: "Sw1A 1aa", zone: "London" },
    { name: "a prefix-only zone does not serve other postal codes of its country", country: "GB", postal: "E1 6AN", zone: null },
    { name: "any country of a multi-country zone matches", country: "AT", postal: "1010", zone: "Europe" },
    { name: "a postal prefix does not apply in a country its zone does not list", country: "FR", postal: "10115", zone: "Europe" },
    { name: "a country no zone lists is not shippable", country: "US", postal: "10115", zone: null },
  ];
  for (const c of cases) {
    test(c.name, () => {
      expect(matchZone(zones, c.country, c.postal)?.name ?? null).toBe(c.zone);
    });
  }

  test("between equally specific zones (shipping methods) the cheapest wins, as the cart lists them", () => {
    expect(matchZone([zone({ name: "Express", baseMinor: 1999 }), zone({ name: "Standard" })], "DE", "80331")?.name).toBe("Standard");
  });

  test("a zone in another currency than the product's serves nothing", () => {
    expect(matchZone([zone({ name: "Dollars", currency: "USD" })], "DE", "80331")).toBeUndefined();
  });

  test("no zones at all match nothing", () => {
    expect(matchZone([], "DE", "80331")).toBeUndefined();
  });
});

describe("shipping cost from a zone (the cart's rule, which the estimate quotes)", () => {
  // base 5.00, 1.00 per item
  const cases: { name: string; zoneFreeOver: number | null; unit: number; qty: number; cost: number; free: boolean }[] = [
    { name: "one unit costs the base plus one per-item fee", zoneFreeOver: null, unit: 1000, qty: 1, cost: 600, free: false },
    { name: "every unit adds the per-item fee", zoneFreeOver: null, unit: 1000, qty: 4, cost: 900, free: false },
    { name: "a subtotal exactly at the zone's free-over is free", zoneFreeOver: 5000, unit: 1000, qty: 5, cost: 0, free: true },
    { name: "a subtotal one unit under the zone's free-over is charged", zoneFreeOver: 5000, unit: 4999, qty: 1, cost: 600, free: false },
    { name: "a zone without a free-over is never free, however large the subtotal (no store-wide fallback)", zoneFreeOver: null, unit: 1_000_000, qty: 3, cost: 800, free: false },
  ];
  for (const c of cases) {
    test(c.name, () => {
      expect(zoneQuote(zone({ name: "z", freeOverMinor: c.zoneFreeOver }), c.qty, c.unit * c.qty)).toEqual({ costMinor: c.cost, free: c.free });
    });
  }
});

describe("maximum shipping days from a policy estimate", () => {
  const cases: [string, string | undefined, number | null][] = [
    ["a range gives its upper bound", "3-5", 5],
    ["a range written in words gives its upper bound", "2 to 7 business days", 7],
    ["a single number is itself", "2", 2],
    ["text without digits is unreadable", "soon", null],
    ["an empty estimate is unreadable", "", null],
    ["a missing estimate is unreadable", undefined, null],
  ];
  for (const [name, input, expected] of cases) test(name, () => expect(maxShippingDays(input)).toBe(expected));
});

describe("the agent hint on availability", () => {
  const cases: { name: string; input: Parameters<typeof agentHint>[0]; says: RegExp }[] = [
    { name: "out of stock per a fresh sync suggests an alternative", input: { inStock: false, stockQuantity: 0, tier: "fresh", confidence: "high" }, says: /suggest an alternative/ },
    { name: "out of stock per stale data asks to re-check", input: { inStock: false, stockQuantity: 0, tier: "stale", confidence: "low" }, says: /re-check/ },
    { name: "five units left is low stock", input: { inStock: true, stockQuantity: 5, tier: "fresh", confidence: "high" }, says: /Low stock \(5 left\)/ },
    { name: "six units left with high confidence is safe to cart", input: { inStock: true, stockQuantity: 6, tier: "fresh", confidence: "high" }, says: /safe to add to a cart/ },
    { name: "untracked stock is not low stock", input: { inStock: true, stockQuantity: null, tier: "fresh", confidence: "high" }, says: /safe to add to a cart/ },
    { name: "medium confidence says probably in stock", input: { inStock: true, stockQuantity: 50, tier: "good", confidence: "medium" }, says: /Probably in stock/ },
    { name: "low confidence calls the data stale", input: { inStock: true, stockQuantity: 50, tier: "stale", confidence: "low" }, says: /stale/ },
  ];
  for (const c of cases) test(c.name, () => expect(agentHint(c.input)).toMatch(c.says));
});

describe("the sustainability score", () => {
  const base: SustainabilityInput = { attributes: {}, tags: [], description: "", storeCountry: "DE" };
  const points = (input: Partial<SustainabilityInput>, name: string) =>
    sustainabilityScore({ ...base, ...input }).components.find((c) => c.name === name)!.points;

  const weight: [number, number][] = [[500, 10], [501, 7], [2000, 7], [2001, 4], [5000, 4], [5001, 1]];
  for (const [grams, pts] of weight) {
    test(`a weight of ${grams} g scores ${pts} weight points`, () => expect(points({ attributes: { weightGrams: grams } }, "weight")).toBe(pts));
  }

  const materials: [string, number][] = [["Organic cotton", 35], ["polyester", 8], ["recycled polyester", 35], ["cotton", 20]];
  for (const [material, pts] of materials) {
    test(`the material "${material}" scores ${pts} material points`, () => expect(points({ attributes: { material } }, "materials")).toBe(pts));
  }

  test("made in the store's country scores full transport points, imported scores 6", () => {
    expect(points({ attributes: { origin: "de" } }, "transport")).toBe(15);
    expect(points({ attributes: { origin: "CN" } }, "transport")).toBe(6);
  });

  test("recycled content scores 0.3 points per percent, capped at 30", () => {
    expect(points({ attributes: { recycledContentPercent: 50 } }, "recycledContent")).toBe(15);
    expect(points({ attributes: { recycledContentPercent: 0 } }, "recycledContent")).toBe(0);
  });

  test("eco claims add 5 per tag and 5 for plastic-free packaging, capped at 10", () => {
    expect(points({ tags: ["Sustainable"] }, "ecoClaims")).toBe(5);
    expect(points({ tags: ["sustainable", "eco-friendly"], description: "Plastic-free packaging" }, "ecoClaims")).toBe(10);
  });

  test("a product declaring nothing scores half of each input, grade D, coverage 0.2", () => {
    expect(sustainabilityScore(base)).toMatchObject({ score: 45, grade: "D", dataCoverage: 0.2 });
  });

  test("a product with the best declared inputs scores 100, grade A, full coverage", () => {
    const s = sustainabilityScore({
      attributes: { material: "bamboo", recycledContentPercent: 100, origin: "DE", weightGrams: 300 },
      tags: ["sustainable", "eco-friendly"],
      description: "",
      storeCountry: "DE",
    });
    expect(s).toMatchObject({ score: 100, grade: "A", dataCoverage: 1 });
  });

  test("grades change exactly at 80, 65, 50 and 35 points", () => {
    // materials 8 (synthetic) + recycled r + transport 6 (imported) + weight 1 (heavy) + claims 0 = 15 + 0.3 r
    const at = (r: number) => sustainabilityScore({ ...base, attributes: { material: "nylon", origin: "CN", weightGrams: 9000, recycledContentPercent: r } });
    const table: [number, number, string][] = [
      [0, 15, "E"],
      [66.7, 35, "D"], // 15 + 20.0 = 35
      [63.3, 34, "E"], // 15 + 19.0 = 34
    ];
    for (const [r, score, grade] of table) expect({ r, ...pick(at(r)) }).toEqual({ r, score, grade });
    // materials 35 + transport 15 + weight 10 + claims 10 = 70 + 0.3 r
    const top = (r: number) => sustainabilityScore({ ...base, tags: ["sustainable", "eco-friendly"], attributes: { material: "cork", origin: "DE", weightGrams: 100, recycledContentPercent: r } });
    expect(pick(top(33.4))).toEqual({ score: 80, grade: "A" }); // 70 + 10.0
    expect(pick(top(30))).toEqual({ score: 79, grade: "B" }); // 70 + 9.0
    // materials 20 + transport 15 + weight 10 + claims 10 = 55 + 0.3 r
    const mid = (r: number) => sustainabilityScore({ ...base, tags: ["sustainable", "eco-friendly"], attributes: { material: "cotton", origin: "DE", weightGrams: 100, recycledContentPercent: r } });
    expect(pick(mid(33.4))).toEqual({ score: 65, grade: "B" });
    expect(pick(mid(30))).toEqual({ score: 64, grade: "C" });
    // materials 20 + transport 6 + weight 4 + claims 5 = 35 + 0.3 r
    const low = (r: number) => sustainabilityScore({ ...base, tags: ["sustainable"], attributes: { material: "cotton", origin: "CN", weightGrams: 3000, recycledContentPercent: r } });
    expect(pick(low(50))).toEqual({ score: 50, grade: "C" });
    expect(pick(low(46.7))).toEqual({ score: 49, grade: "D" });
  });
});
const pick = (s: { score: number; grade: string }) => ({ score: s.score, grade: s.grade });

const item = (over: Partial<CompareItem> & Pick<CompareItem, "id">): CompareItem => ({
  title: `Product ${over.id}`,
  priceMinor: 1000,
  currency: "EUR",
  inStock: true,
  trustScore: 0.5,
  merchantSlug: `m-${over.id}`,
  policies: { acceptsReturns: false },
  freeShippingThresholdMinor: null,
  ...over,
});
const major = (m: number) => m / 100;

describe("comparing products", () => {
  test("price ranges are per currency, in major units", () => {
    const c = compareProducts([item({ id: "a", priceMinor: 1000 }), item({ id: "b", priceMinor: 2500 }), item({ id: "c", currency: "USD", priceMinor: 999 })], major);
    expect(c.priceRange).toEqual([{ currency: "EUR", min: 10, max: 25 }, { currency: "USD", min: 9.99, max: 9.99 }]);
  });

  test("an in-stock product is the best value over a cheaper out-of-stock one from a more trusted merchant", () => {
    const c = compareProducts([item({ id: "a", inStock: false, priceMinor: 500, trustScore: 1 }), item({ id: "b", priceMinor: 5000, trustScore: 0 })], major);
    expect(c.bestValue).toBe("b");
  });

  test("between equal products no one wins a title; the recommendation goes to the lower id in any order (audit A7 MED-3)", () => {
    for (const order of [[item({ id: "a" }), item({ id: "b" })], [item({ id: "b" }), item({ id: "a" })]]) {
      const c = compareProducts(order, major);
      expect([c.bestValue, c.bestTrust, c.bestShipping, c.recommendation.productId]).toEqual([null, null, null, "a"]);
    }
  });

  test("the best return policy accepts returns, then has the longest window, then the lowest restocking fee", () => {
    const c = compareProducts(
      [
        item({ id: "none", policies: { acceptsReturns: false, returnWindowDays: 365 } }),
        item({ id: "short", policies: { acceptsReturns: true, returnWindowDays: 14 } }),
        item({ id: "long-fee", policies: { acceptsReturns: true, returnWindowDays: 30, restockingFeePercent: 10 } }),
        item({ id: "long", policies: { acceptsReturns: true, returnWindowDays: 30, restockingFeePercent: 5 } }),
      ],
      major,
    );
    expect(c.bestReturnPolicy).toBe("long");
  });

  test("the best shipping has the fewest maximum days, then the lowest free-shipping threshold", () => {
    const c = compareProducts(
      [
        item({ id: "slow", policies: { acceptsReturns: false, shippingEstimateDays: "5-9" }, freeShippingThresholdMinor: 0 }),
        item({ id: "fast-high", policies: { acceptsReturns: false, shippingEstimateDays: "1-3" }, freeShippingThresholdMinor: 9000 }),
        item({ id: "fast-low", policies: { acceptsReturns: false, shippingEstimateDays: "2-3" }, freeShippingThresholdMinor: 5000 }),
      ],
      major,
    );
    expect(c.bestShipping).toBe("fast-low");
  });

  test("nobody accepting returns or stating shipping leaves those bests empty", () => {
    const c = compareProducts([item({ id: "a" })], major);
    expect([c.bestReturnPolicy, c.bestShipping]).toEqual([null, null]);
  });

  test("the recommendation is the product holding the most titles and names them", () => {
    const c = compareProducts(
      [item({ id: "a", trustScore: 0.9, priceMinor: 2000 }), item({ id: "b", trustScore: 0.2, priceMinor: 1000, policies: { acceptsReturns: true, returnWindowDays: 30, shippingEstimateDays: "2" } })],
      major,
    );
    expect(c.recommendation).toEqual({ productId: "b", reasons: ["Product b from m-b", "best value", "best return policy", "fastest shipping"] });
  });

  test("when two products hold as many titles, the better value is recommended", () => {
    const c = compareProducts(
      [item({ id: "a", trustScore: 0.9, priceMinor: 1000 }), item({ id: "b", trustScore: 0.2, priceMinor: 2000, policies: { acceptsReturns: true, returnWindowDays: 30, shippingEstimateDays: "2" } })],
      major,
    );
    expect(c.recommendation).toEqual({ productId: "a", reasons: ["Product a from m-a", "best value", "most trusted merchant"] });
  });

  test("an out-of-stock recommendation says so", () => {
    const c = compareProducts([item({ id: "a", inStock: false })], major);
    expect(c.recommendation.reasons).toContain("note: currently out of stock");
  });
});

describe("comparing products in more than one currency (audit A2-F4)", () => {
  test("no price-based best: bestValue and the recommendation are null and the reasons say why", () => {
    const c = compareProducts([item({ id: "usd", currency: "USD", priceMinor: 799 }), item({ id: "eur", currency: "EUR", priceMinor: 15999 })], major);
    expect([c.bestValue, c.recommendation.productId]).toEqual([null, null]);
    expect(c.recommendation.reasons).toEqual([
      "The products are priced in 2 currencies (EUR, USD): prices are not compared across currencies, so there is no best value or recommendation; compare products of one currency.",
    ]);
  });

  test("shipping is decided by days alone: thresholds in different currencies are not compared", () => {
    const slowCheap = item({ id: "a", currency: "USD", policies: { acceptsReturns: false, shippingEstimateDays: "2-4" }, freeShippingThresholdMinor: 100 });
    const fastDear = item({ id: "b", currency: "EUR", policies: { acceptsReturns: false, shippingEstimateDays: "1-4" }, freeShippingThresholdMinor: 900000 });
    // same maximum days: a tie (no one), not the smaller number of another currency, in either order
    expect(compareProducts([fastDear, slowCheap], major).bestShipping).toBeNull();
    expect(compareProducts([slowCheap, fastDear], major).bestShipping).toBeNull();
    // a threshold alone says nothing across currencies
    expect(compareProducts([item({ id: "x", currency: "USD", freeShippingThresholdMinor: 0 }), item({ id: "y" })], major).bestShipping).toBeNull();
  });
});
