/**
 * Which shipping quote each store of a cart carries, and the options a destination has. Pure; docs/checkout.md
 * "Shipping" has the rules as a table.
 *
 * Without a destination on the cart a store is quoted by the one zone covering its whole own country in the cart's
 * currency, or free when it has no zones at all. A store whose own country has MORE than one country-wide zone (a
 * choice of methods, e.g. Standard and Express) is not guessed: the buyer's destination and a picked option come
 * first (`get_shipping_rates` with the cart; REST `shipping` on the preview), else PRECONDITION_NOT_MET. So is a
 * store that has zones but none of them country-wide at home in that currency (only abroad, only postal prefixes,
 * another currency): shipping free there without a destination let an agent avoid every charge such a merchant makes
 * by leaving the destination out (session 16, audit A-8).
 *
 * With a destination every store is quoted for it: the zones serving it most specifically (a matching postal prefix
 * beats a country-wide zone, as for shipping estimates) are its options, cheapest first. The cart's choice is used
 * while it is still one of them; a single option needs no choice; a store with zones but none serving the
 * destination does not ship there. A store with no zones at all ships free anywhere (as before).
 */
import { zoneSpecificity } from "../store/insights.ts";
import type { ShippingZone } from "../store/schemas.ts";
import { shippingFor, type ShippingRule } from "./totals.ts";

export interface ShippingDestination {
  countryCode: string;
  postalCode: string;
}

/** What a cart records: the destination and, per store slug, the chosen zone id. */
export interface CartShipping extends ShippingDestination {
  choices: Record<string, string>;
}

/** The destination-less quote `readCatalog` reads: the cheapest country-wide domestic zone and how many there are. */
export interface DomesticQuote {
  rule: ShippingRule | null;
  options: number;
  /** Whether the store has any shipping zone at all (none: it ships free anywhere). */
  hasZones: boolean;
}

export type StoreShipping =
  | { status: "quoted"; rule: ShippingRule; zone: ShippingZone | null }
  /** `options` is empty when no destination is known yet (the options depend on it). */
  | { status: "selection_required"; options: ShippingZone[] }
  | { status: "not_shippable" };

export const FREE_SHIPPING: ShippingRule = { baseMinor: 0, perItemMinor: 0, freeOverMinor: null };

export const ruleOf = (z: ShippingZone): ShippingRule => ({ baseMinor: z.baseMinor, perItemMinor: z.perItemMinor, freeOverMinor: z.freeOverMinor });

/**
 * What `zone` charges for `itemCount` units worth `subtotalMinor`: the cart's rule (`shippingFor`: base + perItem ×
 * items, free at or above the zone's own `freeOverMinor`, a zone without one never free). The shipping estimate
 * quotes through this, so it says what a preview of the same product, quantity and destination charges.
 */
export function zoneQuote(zone: ShippingZone, itemCount: number, subtotalMinor: number): { costMinor: number; free: boolean } {
  return ruleQuote(ruleOf(zone), itemCount, subtotalMinor);
}

export function ruleQuote(rule: ShippingRule, itemCount: number, subtotalMinor: number): { costMinor: number; free: boolean } {
  const costMinor = shippingFor(rule, itemCount, subtotalMinor);
  return { costMinor, free: costMinor === 0 };
}

/**
 * The quote a shipping estimate gives for one store and a destination: what a cart of the store's items with that
 * destination is charged (`storeShipping`), with the cheapest option when the merchant has several methods there
 * (an estimate quotes; a cart asks the buyer to pick). So a store with no zones at all ships free in the estimate as
 * in the cart (zone null), and a store whose zones do not serve the destination does not ship there in either.
 */
export function estimateShipping(
  zones: readonly ShippingZone[],
  dest: ShippingDestination,
  currency: string,
): { status: "quoted"; rule: ShippingRule; zone: ShippingZone | null } | { status: "not_shippable" } {
  const cheapest = shippingOptions(zones, dest, currency)[0];
  const quote = storeShipping({ domestic: { rule: null, options: 0, hasZones: zones.length > 0 }, destination: dest, zones, currency, ...(cheapest ? { choice: cheapest.id } : {}) });
  // With the cheapest option chosen a destination is never left to pick: a selection here would have no option.
  return quote.status === "quoted" ? quote : { status: "not_shippable" };
}

/** Zones serving the destination most specifically, in the cart's currency, cheapest first (then by name). */
export function shippingOptions(zones: readonly ShippingZone[], dest: ShippingDestination, currency: string): ShippingZone[] {
  let best = -1;
  let out: ShippingZone[] = [];
  for (const z of zones) {
    if (z.currency.toUpperCase() !== currency.toUpperCase()) continue;
    const s = zoneSpecificity(z, dest.countryCode, dest.postalCode);
    if (s === null || s < best) continue;
    if (s > best) {
      best = s;
      out = [];
    }
    out.push(z);
  }
  return out.sort((a, b) => a.baseMinor - b.baseMinor || a.perItemMinor - b.perItemMinor || a.name.localeCompare(b.name));
}

/** The quote of one store of the cart. `zones` (all the store's zones) is needed only with a destination. */
export function storeShipping(input: {
  domestic: DomesticQuote;
  destination: ShippingDestination | null;
  zones?: readonly ShippingZone[];
  choice?: string;
  currency: string;
}): StoreShipping {
  if (!input.destination) {
    if (input.domestic.options > 1) return { status: "selection_required", options: [] };
    if (input.domestic.rule) return { status: "quoted", rule: input.domestic.rule, zone: null };
    return input.domestic.hasZones ? { status: "selection_required", options: [] } : { status: "quoted", rule: FREE_SHIPPING, zone: null };
  }
  const zones = input.zones ?? [];
  if (zones.length === 0) return { status: "quoted", rule: FREE_SHIPPING, zone: null };
  const options = shippingOptions(zones, input.destination, input.currency);
  if (options.length === 0) return { status: "not_shippable" };
  const chosen = options.find((z) => z.id === input.choice) ?? (options.length === 1 ? options[0] : undefined);
  return chosen ? { status: "quoted", rule: ruleOf(chosen), zone: chosen } : { status: "selection_required", options };
}

/**
 * The cart's new shipping record for a destination. `optionId` picks that zone for the store it belongs to (it must
 * be one of that store's options for the destination, else `unknownOption`); other stores keep their earlier choice
 * while it still serves the destination. A store with several options and no valid choice is left unchosen: the
 * buyer picks, we do not.
 */
export function chooseShipping(
  stores: readonly { slug: string; zones: readonly ShippingZone[] }[],
  dest: ShippingDestination,
  currency: string,
  previous: CartShipping | null,
  optionId?: string,
): { shipping: CartShipping; unknownOption: boolean } {
  const choices: Record<string, string> = {};
  let matched = optionId === undefined;
  for (const { slug, zones } of stores) {
    const options = shippingOptions(zones, dest, currency);
    const picked = optionId === undefined ? undefined : options.find((z) => z.id === optionId);
    if (picked) matched = true;
    const kept = options.find((z) => z.id === previous?.choices[slug]);
    const chosen = picked ?? kept ?? (options.length === 1 ? options[0] : undefined);
    if (chosen) choices[slug] = chosen.id;
  }
  return { shipping: { countryCode: dest.countryCode.toUpperCase(), postalCode: dest.postalCode.trim(), choices }, unknownOption: !matched };
}
