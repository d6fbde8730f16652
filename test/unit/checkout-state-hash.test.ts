import { describe, expect, test } from "bun:test";
import {
  assertStateExecutable,
  canonicalJson,
  checkoutStateFromTotals,
  compareStates,
  decreaseToleranceMinor,
  stateHash,
  stateTotalMinor,
  type CheckoutState,
  type LineState,
} from "../../actors/cart/state-hash.ts";
import { computeTotals } from "../../actors/cart/totals.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

const line = (over: Partial<LineState> = {}): LineState => ({ productId: "p1", variantId: null, quantity: 1, unitPriceMinor: 10_000, available: 5, ...over });
const state = (lines: LineState[] = [line()], over: Partial<CheckoutState["stores"][number]> = {}, currency = "USD"): CheckoutState => ({
  currency,
  stores: [{ storeId: "s1", policyVersion: "v1", shippingMinor: 0, discountMinor: 0, taxMinor: 0, lines, ...over }],
});
const withPrice = (p: number): CheckoutState => state([line({ unitPriceMinor: p })]);

describe("canonical state hash", () => {
  test("the hash is 64 lowercase hex characters and stable for equal input", () => {
    expect(stateHash(state())).toMatch(/^[0-9a-f]{64}$/);
    expect(stateHash(state())).toBe(stateHash(state()));
  });

  test("canonical JSON sorts object keys at every depth", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: "x" } })).toBe('{"a":{"c":"x","d":[2,{"y":2,"z":1}]},"b":1}');
  });

  test("key order in the input does not change the hash", () => {
    const a = state();
    const b: CheckoutState = JSON.parse(JSON.stringify({ stores: a.stores.map((s) => ({ lines: s.lines, taxMinor: 0, storeId: "s1", discountMinor: 0, shippingMinor: 0, policyVersion: "v1" })), currency: "USD" }));
    expect(stateHash(b)).toBe(stateHash(a));
  });

  test("the order of lines and stores does not change the hash", () => {
    const l1 = line({ productId: "p1" });
    const l2 = line({ productId: "p2", unitPriceMinor: 500 });
    const s2 = { storeId: "s2", policyVersion: "v9", shippingMinor: 100, discountMinor: 0, taxMinor: 0, lines: [line({ productId: "p3" })] };
    const a: CheckoutState = { currency: "USD", stores: [{ ...state([l1, l2]).stores[0] }, s2] };
    const b: CheckoutState = { currency: "USD", stores: [s2, { ...state([l2, l1]).stores[0] }] };
    expect(stateHash(a)).toBe(stateHash(b));
  });

  test("stock that still covers the quantity does not change the hash", () => {
    expect(stateHash(state([line({ available: 5 })]))).toBe(stateHash(state([line({ available: 1 })])));
    expect(stateHash(state([line({ available: null })]))).toBe(stateHash(state([line({ available: 1 })])));
  });

  for (const [what, changed] of [
    ["a price", withPrice(10_001)],
    ["the currency", state(undefined, undefined, "EUR")],
    ["the policy version", state(undefined, { policyVersion: "v2" })],
    ["the shipping quote", state(undefined, { shippingMinor: 1 })],
    ["stock running short", state([line({ available: 0 })])],
    ["a quantity", state([line({ quantity: 2 })])],
  ] as const) {
    test(`a change of ${what} changes the hash`, () => {
      expect(stateHash(changed)).not.toBe(stateHash(state()));
    });
  }
});

describe("compareStates at the tolerance and the cut (previewed total 100.00)", () => {
  const cases: [string, number, "ok" | "reconfirm" | "blocked"][] = [
    ["nothing moved", 10_000, "ok"],
    ["a decrease of 0.49 (within the 0.50 minimum tolerance)", 9_951, "ok"],
    ["a decrease of exactly the 0.50 tolerance", 9_950, "ok"],
    ["a decrease of 0.51 (one minor unit past the tolerance)", 9_949, "reconfirm"],
    ["an increase of one minor unit", 10_001, "reconfirm"],
    ["an increase of exactly 10 %", 11_000, "reconfirm"],
    ["an increase of 10 % plus one minor unit", 11_001, "blocked"],
    ["a decrease of exactly 10 %", 9_000, "reconfirm"],
    ["a decrease of 10 % plus one minor unit", 8_999, "blocked"],
  ];
  for (const [what, price, outcome] of cases) {
    test(`${what} → ${outcome}`, () => {
      expect(compareStates(withPrice(10_000), withPrice(price)).outcome).toBe(outcome);
    });
  }

  test("on a large total the decrease tolerance is 0.5 % rather than 50 minor units", () => {
    expect(decreaseToleranceMinor(1_000_000)).toBe(5_000);
    expect(compareStates(withPrice(1_000_000), withPrice(995_000)).outcome).toBe("ok");
    expect(compareStates(withPrice(1_000_000), withPrice(994_999)).outcome).toBe("reconfirm");
  });

  test("a blocked price move names price_beyond_cut with both totals", () => {
    const r = compareStates(withPrice(10_000), withPrice(12_000));
    expect(r.outcome).toBe("blocked");
    if (r.outcome === "blocked") expect(r.reasons[0]).toMatchObject({ code: "price_beyond_cut", previewed_total_minor: 10_000, current_total_minor: 12_000 });
  });

  test("any increase from a previewed total of zero is blocked", () => {
    expect(compareStates(withPrice(0), withPrice(1)).outcome).toBe("blocked");
    expect(compareStates(withPrice(0), withPrice(0)).outcome).toBe("ok");
  });

  test("a line price increase needs reconfirmation even when another line's decrease keeps the total", () => {
    const before = state([line({ productId: "a", unitPriceMinor: 5_000 }), line({ productId: "b", unitPriceMinor: 5_000 })]);
    const after = state([line({ productId: "a", unitPriceMinor: 5_100 }), line({ productId: "b", unitPriceMinor: 4_900 })]);
    const r = compareStates(before, after);
    expect(r.outcome).toBe("reconfirm");
    if (r.outcome === "reconfirm") expect(r.reasons.map((x) => x.code)).toEqual(["unit_price_increased"]);
  });

  test("a shipping increase needs reconfirmation and is named", () => {
    const r = compareStates(state(), state(undefined, { shippingMinor: 500 }));
    expect(r.outcome).toBe("reconfirm");
    if (r.outcome === "reconfirm") expect(r.reasons.map((x) => x.code)).toEqual(["total_increased", "shipping_increased"]);
  });

  test("a coupon that stopped applying raises the total and needs reconfirmation", () => {
    const r = compareStates(state(undefined, { discountMinor: 500 }), state(undefined, { discountMinor: 0 }));
    expect(r.outcome).toBe("reconfirm");
  });
});

describe("compareStates blocking reasons", () => {
  const blockedCodes = (a: CheckoutState, b: CheckoutState): string[] => {
    const r = compareStates(a, b);
    return r.outcome === "blocked" ? r.reasons.map((x) => x.code) : [];
  };

  test("stock gone blocks with out_of_stock", () => {
    expect(blockedCodes(state(), state([line({ available: 0 })]))).toEqual(["out_of_stock"]);
  });
  test("stock below the quantity blocks with stock_insufficient", () => {
    expect(blockedCodes(state([line({ quantity: 3 })]), state([line({ quantity: 3, available: 2 })]))).toEqual(["stock_insufficient"]);
  });
  test("untracked stock never blocks", () => {
    expect(compareStates(state(), state([line({ available: null, quantity: 1 })])).outcome).toBe("ok");
  });
  test("a policy version change blocks", () => {
    expect(blockedCodes(state(), state(undefined, { policyVersion: "v2" }))).toEqual(["policy_version_changed"]);
  });
  test("a currency change blocks", () => {
    expect(blockedCodes(state(), state(undefined, undefined, "EUR"))).toEqual(["currency_changed"]);
  });
  test("a vanished line blocks", () => {
    expect(blockedCodes(state(), state([line({ productId: "p2" })]))).toEqual(["line_added", "line_missing"]);
  });
  test("a vanished store blocks", () => {
    expect(blockedCodes(state(), { currency: "USD", stores: [] })).toContain("store_missing");
  });
  test("several problems are all reported", () => {
    expect(blockedCodes(state(), state([line({ available: 0, unitPriceMinor: 20_000 })], { policyVersion: "v2" }))).toEqual([
      "policy_version_changed",
      "out_of_stock",
      "price_beyond_cut",
    ]);
  });
});

describe("assertStateExecutable and reconfirmed_state_hash", () => {
  const before = withPrice(10_000);
  const after = withPrice(10_200);

  test("an unchanged state proceeds without reconfirmation", () => {
    expect(assertStateExecutable(before, before)).toEqual({ currentHash: stateHash(before), reconfirmed: false });
  });

  test("a moved state without a hash is refused with the current hash to reconfirm", () => {
    const err = errorOf(() => assertStateExecutable(before, after));
    expect(err?.code).toBe("STATE_RECONFIRMATION_REQUIRED");
    expect(err?.details?.reconfirm_state_hash).toBe(stateHash(after));
  });

  test("passing the current hash as reconfirmed_state_hash lets it proceed", () => {
    expect(assertStateExecutable(before, after, stateHash(after))).toEqual({ currentHash: stateHash(after), reconfirmed: true });
  });

  test("a stale reconfirmed hash is refused again with the fresh hash", () => {
    const later = withPrice(10_300);
    const err = errorOf(() => assertStateExecutable(before, later, stateHash(after)));
    expect(err?.code).toBe("STATE_RECONFIRMATION_REQUIRED");
    expect(err?.details?.reconfirm_state_hash).toBe(stateHash(later));
    expect(err?.details?.stale_hash_sent).toBe(true);
  });

  test("a blocked state cannot be reconfirmed, even with its current hash", () => {
    const gone = state([line({ available: 0 })]);
    const err = errorOf(() => assertStateExecutable(before, gone, stateHash(gone)));
    expect(err?.code).toBe("STATE_EXECUTION_BLOCKED");
    expect((err?.details?.reasons as { code: string }[])[0].code).toBe("out_of_stock");
  });
});

describe("state from totals", () => {
  test("the state built from totals carries their prices, shipping and total", () => {
    const totals = computeTotals({
      lines: [{ storeId: "s1", productId: "p1", quantity: 2, listPriceMinor: 1_250, currency: "USD" }],
      shipping: { s1: { baseMinor: 500, perItemMinor: 0 } },
      now: 0,
    });
    const s = checkoutStateFromTotals(totals, { policyVersion: () => "v7", available: () => 10 });
    expect(s.stores[0]).toMatchObject({ storeId: "s1", policyVersion: "v7", shippingMinor: 500 });
    expect(stateTotalMinor(s)).toBe(totals.totalMinor);
  });
});

describe("compareStates with stores already paid in the session (P-1 and its follow-up)", () => {
  const store = (storeId: string, over: Partial<CheckoutState["stores"][number]> = {}, lines: LineState[] = [line({ productId: `${storeId}-p` })]) => ({
    storeId,
    policyVersion: "v1",
    shippingMinor: 0,
    discountMinor: 0,
    taxMinor: 0,
    lines,
    ...over,
  });
  const two = (paid: Partial<CheckoutState["stores"][number]> = {}, unpaid: Partial<CheckoutState["stores"][number]> = {}, paidLines?: LineState[], unpaidLines?: LineState[]): CheckoutState => ({
    currency: "USD",
    stores: [store("paid", paid, paidLines), store("open", unpaid, unpaidLines)],
  });
  const PAID = new Set(["paid"]);

  for (const [what, moved] of [
    ["its stock sold by its own capture", two(undefined, undefined, [line({ productId: "paid-p", available: 0 })])],
    ["its price beyond the blocking cut", two(undefined, undefined, [line({ productId: "paid-p", unitPriceMinor: 30_000 })])],
    ["its price within the cut", two(undefined, undefined, [line({ productId: "paid-p", unitPriceMinor: 10_100 })])],
    ["its policy version", two({ policyVersion: "v2" })],
    ["its shipping and tax", two({ shippingMinor: 900, taxMinor: 300 })],
    ["its discount", two({ discountMinor: 0 })],
  ] as const) {
    test(`a paid store's move (${what}) neither blocks nor asks to reconfirm the remaining store's payment`, () => {
      const previewed = what === "its discount" ? two({ discountMinor: 500 }) : two();
      expect(compareStates(previewed, moved, PAID)).toEqual({ outcome: "ok", currentHash: compareStates(previewed, previewed, PAID).currentHash });
      // without the paid store named, the same move counts (the check is not simply switched off)
      expect(compareStates(previewed, moved).outcome).not.toBe("ok");
    });
  }

  test("the remaining store's moves still count, and the cut is measured on what is left to pay", () => {
    // +1 001 on the open store: 5 % of the whole previewed total (20 000) but beyond 10 % of the open store's 10 000
    const r = compareStates(two(), two(undefined, undefined, undefined, [line({ productId: "open-p", unitPriceMinor: 11_001 })]), PAID);
    expect(r.outcome).toBe("blocked");
    if (r.outcome === "blocked") expect(r.reasons[0]).toMatchObject({ code: "price_beyond_cut", previewed_total_minor: 10_000, current_total_minor: 11_001 });
    expect(compareStates(two(), two(undefined, { policyVersion: "v2" }), PAID).outcome).toBe("blocked");
    expect(compareStates(two(), two(undefined, { shippingMinor: 100 }), PAID).outcome).toBe("reconfirm");
  });

  test("the hash to reconfirm covers only the compared stores: a paid store moving after the question does not ask again", () => {
    const asked = two(undefined, undefined, undefined, [line({ productId: "open-p", unitPriceMinor: 10_200 })]);
    const err = errorOf(() => assertStateExecutable(two(), asked, null, PAID));
    expect(err?.code).toBe("STATE_RECONFIRMATION_REQUIRED");
    const hash = err?.details?.reconfirm_state_hash as string;
    const paidMovedSince = two({ policyVersion: "v3", shippingMinor: 700 }, undefined, [line({ productId: "paid-p", unitPriceMinor: 12_345, available: 0 })], [line({ productId: "open-p", unitPriceMinor: 10_200 })]);
    expect(assertStateExecutable(two(), paidMovedSince, hash, PAID)).toEqual({ currentHash: hash, reconfirmed: true });
    expect(hash).toBe(stateHash({ currency: "USD", stores: [store("open", {}, [line({ productId: "open-p", unitPriceMinor: 10_200 })])] }));
  });

  test("without paid stores the hash compared is the full state's, as a preview's", () => {
    expect(compareStates(two(), two()).currentHash).toBe(stateHash(two()));
    expect(compareStates(two(), two(), new Set()).currentHash).toBe(stateHash(two()));
  });
});
