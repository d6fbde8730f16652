/**
 * The remembered-fragment serialiser (gateway/mcp/json.ts) against JSON.stringify: whatever the items look like and
 * however they change between calls, the JSON and its escaped form are exactly what JSON.stringify gives.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { forgetSerialisedItems, sameJsonData, serialiseJson } from "../../gateway/mcp/json.ts";
import { successResult } from "../../gateway/mcp/errors.ts";
import { toolsCallResponse } from "../../gateway/mcp/server.ts";

function expectExact(value: unknown) {
  const s = serialiseJson(value);
  const json = JSON.stringify(value);
  expect(s.json).toBe(json);
  expect(`"${s.escaped}"`).toBe(JSON.stringify(json));
}

const product = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  title: 'Quote " and \\ backslash\nnewline \u2028 \ud800 lone',
  price: 249.99,
  compareAtPrice: null,
  inStock: true,
  merchant: { slug: "demo-store", trustScore: 0.86, lastSyncAt: "2026-11-22T07:17:57.293Z" },
  tags: ["a", "ü", 1, null],
  why_ranked: "text match 1.00×0.55=0.55",
  ...over,
});

beforeEach(() => forgetSerialisedItems());

describe("serialiseJson is exactly JSON.stringify", () => {
  test("a search-shaped result, first call and repeated calls with fresh but equal items", () => {
    for (let i = 0; i < 3; i++) {
      expectExact({ products: [product("p1"), product("p2")], meta: { total: 2, page: 1 }, queryMeta: { query: "x", tookMs: i } });
    }
  });

  test("an item whose content changed since it was remembered is serialised anew", () => {
    expectExact({ products: [product("p1")] });
    const changes: Record<string, unknown>[] = [
      { price: 250 },
      { inStock: false },
      { merchant: { slug: "demo-store", trustScore: 0.5, lastSyncAt: "2026-11-22T07:17:57.293Z" } },
      { merchant: { trustScore: 0.86, slug: "demo-store", lastSyncAt: "2026-11-22T07:17:57.293Z" } },
      { tags: ["a", "ü", 1] },
      { tags: ["a", "ü", 1, null, 2] },
      { extra: 1 },
      { compareAtPrice: 0 },
      { compareAtPrice: undefined },
      { price: -0 },
      { price: NaN },
      { price: Infinity },
      { when: new Date(0) },
      { nested: { toJSON: () => "custom" } },
      { fn: () => 1 },
      { sym: Symbol("s") },
      { arr: [undefined, () => 1, Symbol("s")] },
    ];
    for (const c of changes) {
      expectExact({ products: [product("p1", c)] });
      expectExact({ products: [product("p1")] }); // and back
    }
  });

  test("key order is part of the identity: the same fields in another order are not the remembered item", () => {
    expectExact({ products: [{ id: "p1", a: 1, b: 2 }] });
    expectExact({ products: [{ id: "p1", b: 2, a: 1 }] });
    expectExact({ products: [{ b: 2, id: "p1", a: 1 }] });
  });

  test("items without a string id, holes, undefined and non-plain items in the list", () => {
    class Item {
      constructor(readonly id: string) {}
    }
    const sparse = [product("p1"), , product("p2")];
    expectExact({ products: [{ id: 7, x: 1 }, { x: 2 }, null, 3, "s", undefined, new Item("p1"), [1, 2], new Date(1)] });
    expectExact({ products: sparse });
    expectExact({ products: [Object.assign(Object.create(null), { id: "p9", v: 1 })] });
    expectExact({ products: [Object.assign(Object.create(null), { id: "p9", v: 1 })] });
    expectExact({ products: [{ id: "p1", toJSON: () => ({ other: true }) }] });
  });

  test("top-level values: undefined, functions and symbols dropped; non-plain values and non-objects as JSON.stringify", () => {
    expectExact({ a: undefined, b: () => 1, c: Symbol("x"), d: 1, e: [1, undefined], f: { g: undefined } });
    expectExact({ 2: "two", 1: "one", b: "b", a: "a" });
    expectExact({ date: new Date(5), list: Object.assign([1, 2], { toJSON: () => "list" }) });
    for (const v of [null, 1, "s", [product("p1")], new Date(3), { toJSON: () => ({ products: [] }) }]) expectExact(v);
    expect(serialiseJson(undefined).json).toBeUndefined();
  });

  test("a randomised mix of changes over many calls never differs from JSON.stringify", () => {
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const values = [0, -0, 1.5, 249.99, 1e21, 1e-7, NaN, null, true, false, "", "é", '"', "\\", "\u0000", undefined, [], [1], {}, { k: 1 }];
    for (let n = 0; n < 500; n++) {
      const products = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => {
        const p: Record<string, unknown> = { id: `p${Math.floor(rnd() * 5)}` };
        for (const k of ["a", "b", "c"]) if (rnd() < 0.8) p[k] = values[Math.floor(rnd() * values.length)];
        return p;
      });
      expectExact({ products, meta: { n } });
    }
  });
});

describe("sameJsonData", () => {
  test("matches plain data equal under JSON, refuses anything JSON.stringify would print differently", () => {
    expect(sameJsonData({ a: [1, { b: "x" }], c: null }, { a: [1, { b: "x" }], c: null })).toBe(true);
    expect(sameJsonData({ a: -0 }, { a: 0 })).toBe(true);
    expect(sameJsonData({ a: NaN }, { a: null })).toBe(false);
    expect(sameJsonData({ a: undefined }, {})).toBe(false);
    expect(sameJsonData({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJsonData({ d: new Date(0) }, { d: new Date(0).toJSON() })).toBe(false);
    expect(sameJsonData([1, 2], { 0: 1, 1: 2 })).toBe(false);
  });
});

describe("the fast-path tools/call response with remembered items", () => {
  test("is byte-for-byte JSON.stringify of the whole message on every call", () => {
    for (let i = 0; i < 3; i++) {
      const data = { products: [product("p1"), product("p2", { price: i })], meta: { total: 2 } };
      const result = successResult(data);
      expect(toolsCallResponse(i, result)).toBe(JSON.stringify({ jsonrpc: "2.0", id: i, result }));
    }
  });

  test("a result whose text block was replaced after it was made is serialised whole", () => {
    const result = successResult({ products: [product("p1")] });
    result.content[0]!.text = "changed";
    expect(toolsCallResponse(1, result)).toBe(JSON.stringify({ jsonrpc: "2.0", id: 1, result }));
  });
});
