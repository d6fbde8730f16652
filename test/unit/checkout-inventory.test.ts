import { describe, expect, test } from "bun:test";
import { availableOf, commit, emptyLedger, release, reserve, setStock, type InventoryLedger } from "../../actors/store/inventory.ts";
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

const ledger = (): InventoryLedger => {
  let l = emptyLedger();
  l = setStock(l, "p1", null, 5);
  l = setStock(l, "p2", "red", 1);
  l = setStock(l, "p3", null, null); // untracked
  return l;
};

const ok = (r: ReturnType<typeof reserve>): InventoryLedger => {
  if (!r.ok) throw new Error(`expected a reservation, got ${JSON.stringify(r.shortages)}`);
  return r.ledger;
};

describe("stock reservations", () => {
  test("reserving lowers availability by the quantity", () => {
    const l = ok(reserve(ledger(), "r1", [{ productId: "p1", quantity: 2 }]));
    expect(availableOf(l, "p1")).toBe(3);
  });

  test("reserving the last unit is allowed and leaves zero, never less", () => {
    const l = ok(reserve(ledger(), "r1", [{ productId: "p1", quantity: 5 }]));
    expect(availableOf(l, "p1")).toBe(0);
    const again = reserve(l, "r2", [{ productId: "p1", quantity: 1 }]);
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.shortages).toEqual([{ productId: "p1", variantId: null, requested: 1, available: 0, reason: "insufficient" }]);
  });

  test("two lines of the same product are summed before checking stock", () => {
    expect(reserve(ledger(), "r1", [{ productId: "p1", quantity: 3 }, { productId: "p1", quantity: 3 }]).ok).toBe(false);
  });

  test("a multi-line reservation is all-or-nothing: one short line holds nothing", () => {
    const before = ledger();
    const r = reserve(before, "r1", [{ productId: "p1", quantity: 2 }, { productId: "p2", variantId: "red", quantity: 2 }]);
    expect(r.ok).toBe(false);
    expect(availableOf(before, "p1")).toBe(5);
    expect(before.reservations).toEqual({});
  });

  test("untracked stock is unlimited", () => {
    const l = ok(reserve(ledger(), "r1", [{ productId: "p3", quantity: 1_000_000 }]));
    expect(availableOf(l, "p3")).toBeNull();
  });

  test("an unknown product is a shortage, not a silent hold", () => {
    const r = reserve(ledger(), "r1", [{ productId: "nope", quantity: 1 }]);
    expect(r.ok ? null : r.shortages[0].reason).toBe("unknown_product");
  });

  test("variants are stocked separately", () => {
    expect(availableOf(ledger(), "p2", "red")).toBe(1);
    expect(availableOf(ledger(), "p2", "blue")).toBe(0);
  });

  test("the same reservation id twice holds once", () => {
    const l1 = ok(reserve(ledger(), "r1", [{ productId: "p1", quantity: 2 }]));
    const l2 = ok(reserve(l1, "r1", [{ productId: "p1", quantity: 2 }]));
    expect(availableOf(l2, "p1")).toBe(3);
  });

  for (const q of [0, -1, 1.5]) {
    test(`a quantity of ${q} is INVALID_ARGUMENT`, () => {
      expect(errorOf(() => reserve(ledger(), "r1", [{ productId: "p1", quantity: q }]))?.code).toBe("INVALID_ARGUMENT");
    });
  }

  test("an empty reservation is INSUFFICIENT_INPUT", () => {
    expect(errorOf(() => reserve(ledger(), "r1", []))?.code).toBe("INSUFFICIENT_INPUT");
  });
});

describe("release and commit", () => {
  const held = (): InventoryLedger => ok(reserve(ledger(), "r1", [{ productId: "p1", quantity: 2 }]));

  test("release gives the units back", () => {
    const l = release(held(), "r1");
    expect(availableOf(l, "p1")).toBe(5);
    expect(l.reservations.r1.status).toBe("released");
  });

  test("commit takes the units off the shelf for good", () => {
    const l = commit(held(), "r1");
    expect(l.stock.p1).toEqual({ onHand: 3, reserved: 0 });
    expect(availableOf(l, "p1")).toBe(3);
  });

  test("release and commit are idempotent", () => {
    expect(release(release(held(), "r1"), "r1").stock.p1).toEqual({ onHand: 5, reserved: 0 });
    expect(commit(commit(held(), "r1"), "r1").stock.p1).toEqual({ onHand: 3, reserved: 0 });
  });

  test("a released reservation cannot be committed, nor a committed one released", () => {
    expect(errorOf(() => commit(release(held(), "r1"), "r1"))?.code).toBe("conflict");
    expect(errorOf(() => release(commit(held(), "r1"), "r1"))?.code).toBe("conflict");
  });

  test("a released reservation id cannot hold again", () => {
    expect(errorOf(() => reserve(release(held(), "r1"), "r1", [{ productId: "p1", quantity: 1 }]))?.code).toBe("conflict");
  });

  test("an unknown reservation is not_found", () => {
    expect(errorOf(() => release(ledger(), "zz"))?.code).toBe("not_found");
  });

  test("a merchant sync below the held quantity shows zero available, never negative", () => {
    const l = setStock(held(), "p1", null, 1);
    expect(availableOf(l, "p1")).toBe(0);
    expect(reserve(l, "r2", [{ productId: "p1", quantity: 1 }]).ok).toBe(false);
    expect(commit(l, "r1").stock.p1).toEqual({ onHand: 0, reserved: 0 });
  });

  test("a negative stock sync is refused", () => {
    expect(errorOf(() => setStock(ledger(), "p1", null, -1))?.code).toBe("INVALID_ARGUMENT");
  });
});

describe("variant holds", () => {
  // Product p4 tracks 3 units in total; its variant red tracks 2, blue 5 (more than the product: a stale sync).
  const variants = (): InventoryLedger => {
    let l = emptyLedger();
    l = setStock(l, "p4", null, 3);
    l = setStock(l, "p4", "red", 2);
    l = setStock(l, "p4", "blue", 5);
    l = setStock(l, "p4", "green", null);
    return l;
  };

  test("a variant line holds the variant's units and the product's", () => {
    const l = ok(reserve(variants(), "r1", [{ productId: "p4", variantId: "red", quantity: 2 }]));
    expect([availableOf(l, "p4", "red"), availableOf(l, "p4")]).toEqual([0, 1]);
  });

  test("a variant line short at the product level holds nothing at either level", () => {
    const before = variants();
    const r = reserve(before, "r1", [{ productId: "p4", variantId: "blue", quantity: 4 }]);
    expect(r.ok ? null : r.shortages).toEqual([{ productId: "p4", variantId: null, requested: 4, available: 3, reason: "insufficient" }]);
    expect([availableOf(before, "p4", "blue"), availableOf(before, "p4")]).toEqual([5, 3]);
  });

  test("lines of different variants add up at the product level", () => {
    expect(reserve(variants(), "r1", [{ productId: "p4", variantId: "red", quantity: 2 }, { productId: "p4", variantId: "blue", quantity: 2 }]).ok).toBe(false);
    expect(reserve(variants(), "r1", [{ productId: "p4", variantId: "red", quantity: 1 }, { productId: "p4", variantId: "blue", quantity: 2 }]).ok).toBe(true);
  });

  test("an untracked variant of a tracked product still holds the product's units", () => {
    const l = ok(reserve(variants(), "r1", [{ productId: "p4", variantId: "green", quantity: 3 }]));
    expect([availableOf(l, "p4", "green"), availableOf(l, "p4")]).toEqual([null, 0]);
  });

  test("release gives both levels back and commit takes both off the shelf", () => {
    const held = ok(reserve(variants(), "r1", [{ productId: "p4", variantId: "red", quantity: 1 }]));
    const released = release(held, "r1");
    expect([availableOf(released, "p4", "red"), availableOf(released, "p4")]).toEqual([2, 3]);
    const committed = commit(held, "r1");
    expect([committed.stock["p4:red"], committed.stock.p4]).toEqual([{ onHand: 1, reserved: 0 }, { onHand: 2, reserved: 0 }]);
  });
});
