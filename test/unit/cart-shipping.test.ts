import { describe, expect, test } from "bun:test";
import { chooseShipping, FREE_SHIPPING, shippingOptions, storeShipping, type CartShipping } from "../../actors/cart/shipping.ts";
import type { ShippingZone } from "../../actors/store/schemas.ts";

let n = 0;
const zone = (over: Partial<ShippingZone> & Pick<ShippingZone, "name">): ShippingZone => ({
  id: `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`,
  storeSlug: "s",
  countries: ["US"],
  postalPrefixes: [],
  currency: "USD",
  baseMinor: 599,
  perItemMinor: 100,
  freeOverMinor: null,
  minDays: 3,
  maxDays: 5,
  ...over,
});

const standard = zone({ name: "Contiguous US" });
const express = zone({ name: "Express", baseMinor: 1999, perItemMinor: 300, minDays: 1, maxDays: 2 });
const alaska = zone({ name: "Alaska & Hawaii", postalPrefixes: ["995", "996"], baseMinor: 1999 });
const canada = zone({ name: "Canada", countries: ["CA"], baseMinor: 1499 });
const SF = { countryCode: "US", postalCode: "94107" };
const ANCHORAGE = { countryCode: "us", postalCode: "99501" };

describe("shipping options for a destination", () => {
  test("are the zones serving it, cheapest first", () => {
    expect(shippingOptions([express, standard, alaska, canada], SF, "USD").map((z) => z.name)).toEqual(["Contiguous US", "Express"]);
  });

  test("a matching postal prefix beats every country-wide zone, whatever the country code's case", () => {
    expect(shippingOptions([express, standard, alaska], ANCHORAGE, "USD").map((z) => z.name)).toEqual(["Alaska & Hawaii"]);
  });

  test("a zone priced in another currency than the cart's is not an option", () => {
    expect(shippingOptions([zone({ name: "EUR", currency: "EUR" })], SF, "USD")).toEqual([]);
  });

  test("no zone serving the destination gives no option", () => {
    expect(shippingOptions([canada], SF, "USD")).toEqual([]);
  });
});

describe("a store's quote", () => {
  const rule = { baseMinor: 599, perItemMinor: 100, freeOverMinor: null };

  test("without a destination, one domestic country-wide zone is quoted as before", () => {
    expect(storeShipping({ domestic: { rule, options: 1, hasZones: true }, destination: null, currency: "USD" })).toEqual({ status: "quoted", rule, zone: null });
  });

  test("without a destination, a store with no zones at all ships free", () => {
    expect(storeShipping({ domestic: { rule: null, options: 0, hasZones: false }, destination: null, currency: "USD" })).toEqual({ status: "quoted", rule: FREE_SHIPPING, zone: null });
  });

  test("without a destination, a store with zones but no domestic country-wide one needs the buyer's destination (not free)", () => {
    expect(storeShipping({ domestic: { rule: null, options: 0, hasZones: true }, destination: null, currency: "USD" })).toEqual({ status: "selection_required", options: [] });
  });

  test("without a destination, two domestic methods need the buyer's destination and pick", () => {
    expect(storeShipping({ domestic: { rule, options: 2, hasZones: true }, destination: null, currency: "USD" })).toEqual({ status: "selection_required", options: [] });
  });

  const dest = (choices: Record<string, string> = {}): CartShipping => ({ ...SF, choices });

  test("with a destination and a chosen option, that option is quoted", () => {
    const q = storeShipping({ domestic: { rule, options: 2, hasZones: true }, destination: dest(), zones: [standard, express], choice: express.id, currency: "USD" });
    expect(q).toEqual({ status: "quoted", rule: { baseMinor: 1999, perItemMinor: 300, freeOverMinor: null }, zone: express });
  });

  test("with a destination but no choice among two options, the buyer still has to pick", () => {
    const q = storeShipping({ domestic: { rule, options: 2, hasZones: true }, destination: dest(), zones: [standard, express], currency: "USD" });
    expect(q).toEqual({ status: "selection_required", options: [standard, express] });
  });

  test("a choice that no longer serves the destination is ignored; a single option needs no choice", () => {
    const q = storeShipping({ domestic: { rule, options: 1, hasZones: true }, destination: dest(), zones: [standard, canada], choice: canada.id, currency: "USD" });
    expect(q).toEqual({ status: "quoted", rule: { baseMinor: 599, perItemMinor: 100, freeOverMinor: null }, zone: standard });
  });

  test("a store whose zones do not serve the destination does not ship there", () => {
    expect(storeShipping({ domestic: { rule: null, options: 0, hasZones: true }, destination: dest(), zones: [canada], currency: "USD" })).toEqual({ status: "not_shippable" });
  });

  test("a store with no zones at all ships free to any destination", () => {
    expect(storeShipping({ domestic: { rule: null, options: 0, hasZones: false }, destination: dest(), zones: [], currency: "USD" })).toEqual({ status: "quoted", rule: FREE_SHIPPING, zone: null });
  });
});

describe("choosing a cart's shipping", () => {
  const stores = [
    { slug: "two-methods", zones: [standard, express] },
    { slug: "one-method", zones: [zone({ name: "Domestic", storeSlug: "one-method" })] },
  ];

  test("a store with one option gets it; a store with several is left for the buyer to pick", () => {
    const { shipping, unknownOption } = chooseShipping(stores, SF, "USD", null);
    expect(unknownOption).toBe(false);
    expect(shipping).toEqual({ countryCode: "US", postalCode: "94107", choices: { "one-method": stores[1]!.zones[0]!.id } });
  });

  test("an option id picks that option for its own store and keeps the others", () => {
    const first = chooseShipping(stores, SF, "USD", null).shipping;
    const { shipping } = chooseShipping(stores, SF, "USD", first, express.id);
    expect(shipping.choices).toEqual({ "two-methods": express.id, "one-method": stores[1]!.zones[0]!.id });
  });

  test("an earlier pick survives a new call without option id while it still serves the destination", () => {
    const picked = chooseShipping(stores, SF, "USD", null, express.id).shipping;
    expect(chooseShipping(stores, { countryCode: "US", postalCode: "10001" }, "USD", picked).shipping.choices["two-methods"]).toBe(express.id);
  });

  test("an option id that is no option of the cart for the destination is reported", () => {
    expect(chooseShipping(stores, SF, "USD", null, canada.id).unknownOption).toBe(true);
    expect(chooseShipping(stores, SF, "USD", null, alaska.id).unknownOption).toBe(true);
  });
});
