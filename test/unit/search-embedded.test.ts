import { describe, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import { searchEngineContract } from "../search/contract.ts";

searchEngineContract("embedded", () => createEmbeddedEngine());

describe("embedded engine specifics", () => {
  test("a price that is not integer minor units is refused", async () => {
    const engine = createEmbeddedEngine();
    const bad = {
      id: "00000000-0000-4000-8000-000000000001", storeSlug: "a", title: "x", description: "", category: null, brand: null,
      tags: [], priceMinor: 12.5, currency: "EUR", inStock: true, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
    };
    await expect(engine.upsert([bad])).rejects.toMatchObject({ code: "validation_error" });
    expect(await engine.count()).toBe(0);
  });

  test("a query made only of stop words returns nothing", async () => {
    const engine = createEmbeddedEngine();
    await engine.upsert([{
      id: "00000000-0000-4000-8000-000000000002", storeSlug: "a", title: "The best of the rest", description: "", category: null,
      brand: null, tags: [], priceMinor: 100, currency: "EUR", inStock: true, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
    }]);
    expect(await engine.query({ text: "the of", window: 10 })).toEqual([]);
    expect(await engine.query({ text: "rest", window: 10 })).toHaveLength(1);
  });
});
