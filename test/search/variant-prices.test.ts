/**
 * Ranking with variant prices (RankableProduct.prices, audit A7 MED-2): the column path the service takes and the
 * record path (candidates without usable refs) filter and price-sort alike, by the rule in docs/search.md.
 */
import { describe, expect, test } from "bun:test";
import { ProductColumns } from "../../search/columns.ts";
import { rankProducts, toProductSummary, type RankableProduct, type RankRequest, type StoreSnapshot } from "../../search/ranking.ts";
import { chargeablePrices } from "../../search/service.ts";

const NOW = new Date("2026-01-01T12:00:00.000Z");
const STORE: StoreSnapshot = {
  slug: "alpha", name: "Alpha", trustScore: 0.9, verificationLevel: "STANDARD", storeStatus: "active",
  lastSyncAt: "2026-01-01T10:00:00.000Z", euQualified: false,
};
const id = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
function product(n: number, priceMinor: number, prices?: number[], currency = "USD"): RankableProduct {
  return {
    id: id(n), storeSlug: "alpha", title: `P${n}`, description: "", priceMinor, ...(prices ? { prices } : {}),
    compareAtPriceMinor: null, currency, inStock: true, imageUrl: null, category: null, createdAt: "2025-06-01T00:00:00.000Z",
  };
}
const PRODUCTS = [
  product(1, 5_000, [3_000, 7_000]), // list 50, variants 30 / 70
  product(2, 4_000),
  product(3, 6_000, [6_000, 6_500]),
  product(4, 500, [400, 900], "JPY"), // ¥500 list, ¥400 / ¥900 variants
];

function rank(request: RankRequest, viaColumns: boolean) {
  const columns = new ProductColumns();
  PRODUCTS.forEach((p, i) => columns.set(i, p));
  const candidates = PRODUCTS.map((p, i) => ({ id: p.id, textScore: 0.5, ...(viaColumns ? { ref: i } : {}) }));
  const res = rankProducts({
    candidates, products: new Map(PRODUCTS.map((p) => [p.id, p])), ...(viaColumns ? { columns } : {}),
    stores: new Map([["alpha", STORE]]), request, now: NOW,
  });
  return res.items.map((p) => p.id);
}

describe("ranking by the prices the cart charges", () => {
  const cases: [string, RankRequest, string[]][] = [
    ["range inside the variant gap matches nothing of it", { filters: { minPrice: 45, maxPrice: 55 } }, []],
    ["range around one variant price", { filters: { minPrice: 25, maxPrice: 35 } }, [id(1)]],
    ["price_asc by the lowest price", { sort: "price_asc" }, [id(1), id(2), id(3), id(4)]],
    ["price_desc by the highest price", { sort: "price_desc" }, [id(4), id(1), id(3), id(2)]],
    ["price_asc by the lowest price in range", { sort: "price_asc", filters: { minPrice: 35, maxPrice: 80 } }, [id(2), id(3), id(1)]],
    ["JPY: a variant price in range, in its own exponent", { filters: { minPrice: 850, maxPrice: 950 } }, [id(4)]],
  ];
  for (const [name, request, want] of cases) {
    test(`${name}: the column path and the record path agree`, () => {
      expect(rank(request, true)).toEqual(want);
      expect(rank(request, false)).toEqual(want);
    });
  }

  test("the summary keeps the list price and gives the variant range; a single-priced product has no range", () => {
    const columns = new ProductColumns();
    PRODUCTS.forEach((p, i) => columns.set(i, p));
    const res = rankProducts({ candidates: PRODUCTS.map((p) => ({ id: p.id, textScore: 0.5 })), products: new Map(PRODUCTS.map((p) => [p.id, p])), stores: new Map([["alpha", STORE]]), request: { sort: "price_asc" }, now: NOW });
    const summaries = res.items.map(toProductSummary);
    expect(summaries[0]).toMatchObject({ id: id(1), price: 50, priceRange: { min: 30, max: 70 } });
    expect(summaries.find((s) => s.id === id(2))!.priceRange).toBeUndefined();
    expect(summaries.find((s) => s.id === id(4))).toMatchObject({ price: 500, priceRange: { min: 400, max: 900 } });
  });

  test("chargeable prices: none without variants or when every variant costs the list price; else ascending and distinct", () => {
    expect(chargeablePrices(5_000, null)).toBeUndefined();
    expect(chargeablePrices(5_000, [])).toBeUndefined();
    expect(chargeablePrices(5_000, [5_000])).toBeUndefined();
    expect(chargeablePrices(5_000, ["7000", 3_000, 7_000])).toEqual([3_000, 7_000]);
    expect(chargeablePrices(5_000, [5_000, 6_000])).toEqual([5_000, 6_000]);
  });
});
