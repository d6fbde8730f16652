/**
 * Related products of a product whose title has no words to match (`"*"`, blank): the title query is a wildcard, so
 * the engine's window would be its first ids in the category, not the category's best products. Like the category
 * fallback (and a wildcard search), every match is ranked and the first candidateWindow of the order kept (review R).
 */
import { expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import { resolveSearchSettings } from "../../search/settings.ts";
import { SearchService, type ProductLoadRow } from "../../search/service.ts";

const NOW = new Date("2026-03-01T12:00:00.000Z");
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

test("related products of a product titled '*' are the category's best, not its first ids", async () => {
  const svc = new SearchService(createEmbeddedEngine());
  svc.settings = resolveSearchSettings({ candidateWindow: 2 });
  await svc.engine.applySettings(svc.settings);
  for (const [slug, trust] of [["source", 0.9], ["low", 0.4], ["high", 0.95]] as const) {
    svc.stores.set(slug, { slug, name: slug, trustScore: trust, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: NOW.toISOString(), euQualified: false });
  }
  const row = (n: number, slug: string, title: string): ProductLoadRow => ({
    id: uuid(n), store_slug: slug, title, description: "", brand: null, category: "Lamps", tags: [], price_minor: 1000,
    compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active: true, created_at: NOW, updated_at: NOW,
  });
  // the low-trust store's products have the smallest ids
  await svc.applyRows([row(1, "low", "Oak lamp"), row(2, "low", "Pine lamp"), row(3, "low", "Ash lamp"), row(10, "high", "Brass lamp"), row(11, "high", "Steel lamp"), row(20, "source", "*")]);
  for (const title of ["*", " "]) {
    const related = await svc.related({ id: uuid(20), title, category: "Lamps", storeSlug: "source" }, 5, NOW);
    expect(related.map((p) => p.id)).toEqual([uuid(10), uuid(11)]);
  }
});
