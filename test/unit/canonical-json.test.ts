/**
 * canonicalJson (actors/cart/state-hash.ts) is built in one walk since session 16; state hashes already stored in
 * checkout sessions and AP2 mandate hashes depend on its exact text, so it must print what the former version
 * (kept below as the reference) printed, and refuse what it refused with the same error.
 */
import { describe, expect, test } from "bun:test";
import { canonicalJson, stateHash, type CheckoutState } from "../../actors/cart/state-hash.ts";

/** The implementation before session 16, verbatim. */
function reference(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RangeError("canonicalJson: non-finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : reference(v))).join(",")}]`;
  if (typeof value === "object") {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${reference(obj[k])}`).join(",")}}`;
  }
  throw new TypeError(`canonicalJson: unsupported ${typeof value}`);
}

function outcome(f: () => string): { text?: string; error?: string } {
  try {
    return { text: f() };
  } catch (e) {
    return { error: `${(e as Error).constructor.name}: ${(e as Error).message}` };
  }
}

/** A seeded generator, so a failure names a value that can be reproduced. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const STRINGS = ["", "a", "demo-store", 'quo"te', "back\\slash", "line\nbreak", "tab\t", "\u0000\u001f", "é ü ß", "日本", "😀", "\ud800", "__proto__", "10", "b", "B", "a b"];
const NUMBERS = [0, -0, 1, -1, 6799, 0.1, 1e21, 1e-7, -1.5e300, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 5e-324];

function value(r: () => number, depth: number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const kind = depth > 3 ? Math.floor(r() * 4) : Math.floor(r() * 7);
  switch (kind) {
    case 0:
      return pick(STRINGS);
    case 1:
      return pick(NUMBERS);
    case 2:
      return pick([true, false, null]);
    case 3:
      return pick([undefined, pick(STRINGS)]);
    case 4: {
      const a: unknown[] = [];
      const n = Math.floor(r() * 4);
      for (let i = 0; i < n; i++) a.push(value(r, depth + 1));
      if (r() < 0.15) a.length += 1; // a trailing hole
      return a;
    }
    default: {
      const o: Record<string, unknown> = {};
      const n = Math.floor(r() * 5);
      for (let i = 0; i < n; i++) o[pick(STRINGS) + (r() < 0.3 ? String(i) : "")] = value(r, depth + 1);
      return o;
    }
  }
}

describe("canonicalJson", () => {
  test("prints what the former implementation printed for 5,000 generated values", () => {
    const r = random(16);
    for (let i = 0; i < 5000; i++) {
      const v = value(r, 0);
      expect(outcome(() => canonicalJson(v))).toEqual(outcome(() => reference(v)));
    }
  });

  test("keeps holes, undefined members, -0, dates and key order exactly as before", () => {
    const samples: unknown[] = [
      [1, , 3], // eslint-disable-line no-sparse-arrays
      [undefined, null],
      { b: 1, a: undefined, A: -0, "10": "x", "9": "y" },
      { d: new Date(0), m: new Map([["k", 1]]) },
      { nested: [{ z: 1, y: [2, { x: 3 }] }] },
    ];
    for (const v of samples) expect(canonicalJson(v)).toBe(reference(v));
    expect(canonicalJson({ b: 1, a: undefined, A: -0, "10": "x", "9": "y" })).toBe('{"10":"x","9":"y","A":0,"b":1}');
  });

  test("refuses what the former implementation refused, with the same error", () => {
    for (const v of [Number.NaN, Infinity, [1, -Infinity], { a: Number.NaN }, 1n, () => 1, Symbol("s"), undefined, { a: 1n }]) {
      const now = outcome(() => canonicalJson(v));
      expect(now.error).toBeDefined();
      expect(now).toEqual(outcome(() => reference(v)));
    }
  });

  test("a checkout state's hash is the one the former text gave", () => {
    const state: CheckoutState = {
      currency: "usd",
      stores: [
        { storeId: "demo-store", policyVersion: "1", shippingMinor: 0, discountMinor: 0, taxMinor: 0, lines: [{ productId: "ac800e42-c8b9-5c62-a7a5-60606f5c33e9", variantId: null, quantity: 1, unitPriceMinor: 6799, available: null }] },
      ],
    };
    // the hash stored by a preview made before this change (the former canonicalJson of this state's view)
    const view = {
      v: "checkout-state.v1",
      currency: "USD",
      stores: [{ store_id: "demo-store", policy_version: "1", shipping_minor: 0, discount_minor: 0, tax_minor: 0, lines: [{ product_id: "ac800e42-c8b9-5c62-a7a5-60606f5c33e9", variant_id: null, quantity: 1, unit_price_minor: 6799, stock_ok: true }] }],
    };
    expect(stateHash(state)).toBe(new Bun.CryptoHasher("sha256").update(reference(view)).digest("hex"));
  });
});
