import { describe, expect, test } from "bun:test";
import { externalIdRepeats, lineExternalId } from "../../actors/store/import-file.ts";

describe("the whole-file externalId rule of a catalog import", () => {
  test("the first line with an externalId passes and every later one is refused naming that first line", () => {
    const r = externalIdRepeats();
    expect(r.check({ externalId: "A" }, 1)).toBeNull();
    expect(r.check({ externalId: "B" }, 2)).toBeNull();
    expect(r.check({ externalId: "A" }, 5)).toEqual({ externalId: "A", field: "externalId", message: "repeated in this file (first on line 1)" });
    expect(r.check({ externalId: "A" }, 9)).toEqual({ externalId: "A", field: "externalId", message: "repeated in this file (first on line 1)" });
  });

  test("ids compare exactly, as the store's upsert key does", () => {
    const r = externalIdRepeats();
    expect(r.check({ externalId: "a" }, 1)).toBeNull();
    expect(r.check({ externalId: "A" }, 2)).toBeNull();
    expect(r.check({ externalId: "a " }, 3)).toBeNull();
  });

  test("a line without a string externalId is left to the store actor's validation and claims nothing", () => {
    const r = externalIdRepeats();
    for (const v of [null, 42, "A", ["A"], { externalId: 7 }, {}]) expect(r.check(v, 1)).toBeNull();
    expect(lineExternalId(["A"])).toBeNull();
    expect(lineExternalId({ externalId: "X" })).toBe("X");
  });

  test("two files are tracked apart", () => {
    const one = externalIdRepeats();
    const two = externalIdRepeats();
    expect(one.check({ externalId: "A" }, 1)).toBeNull();
    expect(two.check({ externalId: "A" }, 1)).toBeNull();
  });
});
