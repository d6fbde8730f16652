import { describe, expect, test } from "bun:test";
import { minorAtLeast, minorAtMost, minorUnitExponent, toMajor, toMinor } from "../../search/money.ts";

describe("money conversion at the edge", () => {
  test("minor units become the decimal a string round trip would give, for every exponent", () => {
    const samples: number[] = [];
    for (let m = -200_000; m <= 200_000; m++) samples.push(m);
    let seed = 7;
    for (let i = 0; i < 200_000; i++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      samples.push(Math.floor((seed / 2147483648 - 0.5) * 2 ** (i % 50)));
    }
    for (const [currency, e] of [["JPY", 0], ["USD", 2], ["KWD", 3]] as const) {
      expect(minorUnitExponent(currency)).toBe(e);
      const mismatches = samples.filter((m) => toMajor(m, currency) !== Number((m / 10 ** e).toFixed(e)));
      expect(mismatches).toEqual([]);
    }
  });

  test("prices survive major → minor → major", () => {
    for (const price of [0, 0.01, 0.1, 19.99, 1234.56, 99999.99]) expect(toMajor(toMinor(price, "EUR"), "EUR")).toBe(price);
    expect(toMajor(1999, "usd")).toBe(19.99);
    expect(toMajor(1500, "JPY")).toBe(1500);
    expect(toMajor(12345, "BHD")).toBe(12.345);
  });
});

describe("exact minor-unit bounds of a price filter (audit A-2)", () => {
  test("a bound finer than the currency is not rounded to the nearest unit", () => {
    expect(minorAtLeast(214.994, "USD")).toBe(21500);
    expect(minorAtMost(214.985, "USD")).toBe(21498);
  });
  test("a bound the currency can state is its own units, binary noise absorbed", () => {
    expect(minorAtLeast(214.99, "USD")).toBe(21499);
    expect(minorAtMost(214.99, "USD")).toBe(21499);
    expect(minorAtLeast(0.29, "USD")).toBe(29);
    expect(minorAtMost(1.005, "KWD")).toBe(1005);
    expect(minorAtLeast(1500, "JPY")).toBe(1500);
    expect(minorAtMost(9_999_999_999.99, "USD")).toBe(999_999_999_999);
  });
});
