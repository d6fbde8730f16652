/**
 * The fast path's byte body (gateway/mcp/json-bytes.ts) against JSON.stringify: whatever the data looks like and
 * however list items change between calls, the bytes are the UTF-8 of JSON.stringify of the whole JSON-RPC answer.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { runToolSerialised } from "../../gateway/mcp/dispatch.ts";
import { deferredSuccessResult, successResult, untouchedSuccessData } from "../../gateway/mcp/errors.ts";
import { forgetRememberedItems, sameJsonData, toolsCallSuccessBody } from "../../gateway/mcp/json-bytes.ts";
import { toolsCallResponse } from "../../gateway/mcp/server.ts";

const decoder = new TextDecoder();

/** What the answer must be: JSON.stringify of the message successResult's result makes. */
function expected(id: string | number | null, data: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data } });
}

function expectExact(data: Record<string, unknown>, id: string | number | null = 1) {
  const body = toolsCallSuccessBody(id, data);
  expect(body).toBeInstanceOf(Uint8Array);
  expect(decoder.decode(body!)).toBe(expected(id, data));
  expect(Buffer.from(body!).equals(Buffer.from(expected(id, data), "utf8"))).toBe(true);
}

const product = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  title: 'Quote " and \\ backslash\nnewline \u2028 \ud800 lone 😀 ü ×',
  price: 249.99,
  compareAtPrice: null,
  inStock: true,
  merchant: { slug: "demo-store", trustScore: 0.86, lastSyncAt: "2026-11-22T07:17:57.293Z" },
  tags: ["a", "ü", 1, null],
  why_ranked: "text match 1.00×0.55=0.55",
  ...over,
});

beforeEach(() => forgetRememberedItems());

describe("toolsCallSuccessBody is the UTF-8 of JSON.stringify of the answer", () => {
  test("a search-shaped result, first call and repeated calls with fresh but equal items, any id", () => {
    for (let i = 0; i < 3; i++) {
      for (const id of [1, "req-7", 0, null]) {
        expectExact({ products: [product("p1"), product("p2")], meta: { total: 2, page: 1 }, queryMeta: { query: "x", tookMs: i } }, id);
      }
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

  test("key names of any spelling, inside remembered items and in their comparison", () => {
    const odd = { id: "p-odd", 'q"uote': 1, "back\\slash": 2, '"]); throw new Error("x"); ("': 3, "ü ×😀": 4, "": 5, "10": 6, "2": 7, __proto__x: 8 };
    for (let i = 0; i < 3; i++) expectExact({ products: [odd, { ...odd }] });
    expectExact({ products: [{ ...odd, "": 6 }] });
    const withProtoKey = JSON.parse('{"id":"p-proto","__proto__":{"a":1},"b":2}');
    expectExact({ products: [withProtoKey] });
    expectExact({ products: [JSON.parse('{"id":"p-proto","__proto__":{"a":1},"b":2}')] });
    expectExact({ products: [JSON.parse('{"id":"p-proto","__proto__":{"a":2},"b":2}')] });
  });

  test("items without a string id, holes, undefined and non-plain items in the list", () => {
    class Item {
      constructor(readonly id: string) {}
    }
    // biome-ignore lint: a sparse array on purpose
    const sparse = [product("p1"), , product("p2")];
    expectExact({ products: [{ id: 7, x: 1 }, { x: 2 }, null, 3, "s", undefined, new Item("p1"), [1, 2], new Date(1)] });
    expectExact({ products: sparse });
    expectExact({ products: [Object.assign(Object.create(null), { id: "p9", v: 1 })] });
    expectExact({ products: [Object.assign(Object.create(null), { id: "p9", v: 1 })] });
    expectExact({ products: [{ id: "p1", toJSON: () => ({ other: true }) }] });
    expectExact({ products: [{ id: "p1", toJSON: () => ({ other: true }) }] });
  });

  test("top-level values: undefined, functions and symbols left out; integer keys first; non-plain values as JSON.stringify", () => {
    expectExact({ a: undefined, b: () => 1, c: Symbol("x"), d: 1, e: [1, undefined], f: { g: undefined } });
    expectExact({ 2: "two", 1: "one", b: "b", a: "a" });
    expectExact({ date: new Date(5), list: Object.assign([1, 2], { toJSON: () => "list" }) });
    expectExact({});
  });

  test("data that is not a plain object is left to the caller", () => {
    for (const v of [null, 1, "s", [1], new Date(3), { toJSON: () => ({}) }]) expect(toolsCallSuccessBody(1, v)).toBeUndefined();
  });

  test("a randomised mix of changes over many calls never differs from JSON.stringify", () => {
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const values = [0, -0, 1.5, 249.99, 1e21, 1e-7, NaN, null, true, false, "", "é", '"', "\\", "\u0000", "\ud83d", "😀", undefined, [], [1], {}, { k: 1 }];
    for (let n = 0; n < 500; n++) {
      const products = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => {
        const p: Record<string, unknown> = { id: `p${Math.floor(rnd() * 5)}` };
        for (const k of ["a", "b", "c"]) if (rnd() < 0.8) p[k] = values[Math.floor(rnd() * values.length)];
        return p;
      });
      expectExact({ products, meta: { n } }, n);
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

describe("deferred success results", () => {
  const data = { products: [product("p1")], meta: { total: 1 } };

  test("read like successResult's: same text, same serialisation", () => {
    const lazy = deferredSuccessResult(data);
    expect(JSON.stringify(lazy)).toBe(JSON.stringify(successResult(data)));
    expect(lazy.content[0]!.text).toBe(JSON.stringify(data));
    expect(toolsCallResponse(3, deferredSuccessResult(data))).toBe(expected(3, data));
  });

  test("once the text block was read or replaced, or the result changed, the fast path no longer writes it from the data", () => {
    expect(untouchedSuccessData(deferredSuccessResult(data))).toBe(data);
    const read = deferredSuccessResult(data);
    void read.content[0]!.text;
    expect(untouchedSuccessData(read)).toBeUndefined();
    const replaced = deferredSuccessResult(data);
    replaced.content[0]!.text = "3 products";
    expect(untouchedSuccessData(replaced)).toBeUndefined();
    expect(JSON.parse(toolsCallResponse(1, replaced)).result.content[0].text).toBe("3 products");
    const swapped = deferredSuccessResult(data);
    swapped.content[0] = { type: "text", text: "other" };
    expect(untouchedSuccessData(swapped)).toBeUndefined();
    const added = deferredSuccessResult(data);
    added.content.push({ type: "text", text: "more" });
    expect(untouchedSuccessData(added)).toBeUndefined();
    const flagged = deferredSuccessResult(data);
    flagged.isError = true;
    expect(untouchedSuccessData(flagged)).toBeUndefined();
    expect(untouchedSuccessData(successResult(data))).toBeUndefined();
  });

  test("data that cannot be serialised is the tool failing (INTERNAL_ERROR), as when successResult serialised it inside runTool", async () => {
    const cyclic: Record<string, unknown> = { products: [] };
    cyclic.self = cyclic;
    const def = {
      name: "t",
      title: "t",
      description: "t",
      group: "discovery",
      input: { type: "object", properties: {} },
      output: {},
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
      auth: "public",
      confirmation: false,
      handler: async () => cyclic,
    };
    const t = { def, check: { Check: () => true, Errors: () => ({ First: () => undefined }) }, entry: {} } as never;
    const ctx = { svc: { siteUrl: "http://localhost" }, store: { slug: "s" }, endpoint: "main", caller: null } as never;
    const body = await runToolSerialised(t, "t", {}, ctx, 9, toolsCallResponse);
    expect(typeof body).toBe("string");
    const msg = JSON.parse(body as string);
    expect(msg.id).toBe(9);
    expect(msg.result.isError).toBe(true);
    expect(msg.result.structuredContent.error.code).toBe("INTERNAL_ERROR");
  });
});
