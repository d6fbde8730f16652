/**
 * Multi-word synonym keys in the embedded engine (session 17, engineer L; docs/search.md "Settings"): a key of 2-3
 * consecutive query words (stop words included) gives its synonyms to every query word it covers.
 */
import { describe, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import type { SearchDoc } from "../../search/engine.ts";
import { resolveSearchSettings } from "../../search/settings.ts";

const doc = (n: number, title: string): SearchDoc => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`, storeSlug: "a", title, description: "", category: null, brand: null,
  tags: [], priceMinor: 100, currency: "EUR", inStock: true, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
});

describe("multi-word synonym keys (embedded)", () => {
  test("the key's synonym covers each of its words (× 0.9); the words themselves still cover them better", async () => {
    const e = createEmbeddedEngine(resolveSearchSettings({ synonyms: { "tee shirt": ["camiseta"], "lord of the rings": ["lotr"] } }));
    await e.upsert([doc(1, "Camiseta"), doc(2, "Tee shirt"), doc(3, "Shirt"), doc(4, "Lotr box set")]);
    const r = await e.query({ text: "tee shirt", window: 10 });
    expect(r.map((c) => c.id)).toEqual([doc(2, "").id, doc(1, "").id, doc(3, "").id]);
    const byId = new Map(r.map((c) => [c.id, c.textScore]));
    expect(byId.get(doc(1, "").id)!).toBeGreaterThanOrEqual(0.9 * 0.9);
    expect(byId.get(doc(3, "").id)!).toBeLessThan(0.6);
    // keys are matched on the words as typed, stop words included; 4 words are more than any key matched
    expect(await e.query({ text: "lord of the rings", window: 10 })).toEqual([]);
    await e.applySettings(resolveSearchSettings({ synonyms: { "lord of rings": ["lotr"] } }));
    expect((await e.query({ text: "Lord of Rings", window: 10 })).map((c) => c.id)).toEqual([doc(4, "").id]);
    expect(await e.query({ text: "lord rings", window: 10 })).toEqual([]);
  });
});
