import { describe, expect, test } from "bun:test";
import { listOfPlannedArity } from "../../actors/store/commerce.ts";

describe("id lists of a planned arity", () => {
  test("one id stays one id", () => {
    expect(listOfPlannedArity(["a"])).toEqual(["a"]);
  });

  test("a list is padded with its last id up to the next power of two", () => {
    expect(listOfPlannedArity(["a", "b", "c"])).toEqual(["a", "b", "c", "c"]);
    expect(listOfPlannedArity(["a", "b", "c", "d", "e"])).toHaveLength(8);
  });

  test("a list already a power of two is left as it is", () => {
    expect(listOfPlannedArity(["a", "b", "c", "d"])).toEqual(["a", "b", "c", "d"]);
  });

  test("a full cart of 100 lines needs eight statement shapes at most", () => {
    const arities = new Set<number>();
    for (let n = 1; n <= 100; n++) arities.add(listOfPlannedArity(Array.from({ length: n }, (_, i) => `id${i}`)).length);
    expect([...arities]).toEqual([1, 2, 4, 8, 16, 32, 64, 128]);
  });

  test("padding never adds an id that was not asked for", () => {
    const ids = ["x", "y", "z"];
    expect(new Set(listOfPlannedArity(ids))).toEqual(new Set(ids));
  });
});
