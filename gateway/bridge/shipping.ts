/**
 * Shipping for the ACP and UCP sessions: the buyer's destination and picked option go onto the cart through the same
 * `selectShipping` message MCP `get_shipping_rates` and the REST preview's `shipping` send, then the cart is previewed.
 * A store that quotes by destination and method (summit-sports-co: Standard and Express) therefore leaves the session
 * not ready (ACP `not_ready_for_payment`, UCP `incomplete`) with a message naming what is missing, instead of
 * refusing the create: the agent updates the session with the address, then with one of the offered options.
 *
 * What the session shows is kept in its meta (`shipping`): the destination, the options each store offers there and
 * the one selected, and what is still missing. Reading a session does not re-quote (a cart turn per read); every
 * create and update does, and the first answer after the cart's destination changed through another route
 * (`followCartDestination`).
 */
import { cartActor } from "../../actors/cart/index.ts";
import type { CartView, PreviewView, ShippingOptionView, ShippingRatesView } from "../../actors/cart/messages.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import type { Services } from "../services.ts";
import { asRecord, getCart, type BridgeSession } from "./common.ts";
import { isUuid } from "../../infra/uuid.ts";
import { isIsoCountryCode } from "../../actors/store/schemas.ts";

export interface Destination {
  countryCode: string;
  postalCode: string;
}

export interface ShippingGroup {
  merchant_slug: string;
  shippable: boolean;
  selected_option_id: string | null;
  options: ShippingOptionView[];
}

/** What the session is still waiting for; `field` is the protocol-neutral part (address or option). */
export interface ShippingMissing {
  reason: "shipping_destination_required" | "shipping_option_required" | "destination_not_served";
  field: "address" | "option";
  merchant_slugs: string[];
  message: string;
}

/** Kept in the session's meta as `shipping`. */
export interface SessionShipping {
  destination: { country_code: string; postal_code: string } | null;
  groups: ShippingGroup[];
  missing: ShippingMissing | null;
}

export interface Priced {
  cart: CartView | PreviewView;
  /** The preview's status (OPEN, READY_FOR_PAYMENT, …) or null while shipping is missing. */
  previewStatus: string | null;
  shipping: SessionShipping;
}

/** A destination from an address with a country (alpha-2) and a postal code; `field` names the input for errors. */
export function destinationOf(country: unknown, postalCode: unknown, field: string): Destination {
  // an ISO code, checked here with the protocol's field: the cart's own check would name `country_code`, a member
  // ACP and UCP do not have (review R-2: "ZZ" passed this shape test and came back 400 on $.country_code)
  if (typeof country !== "string" || !/^[A-Za-z]{2}$/.test(country.trim()) || !isIsoCountryCode(country.trim().toUpperCase())) {
    throw fail("INVALID_ARGUMENT", `${field} needs a country (ISO 3166-1 alpha-2, e.g. US).`, { field });
  }
  if (typeof postalCode !== "string" || postalCode.trim().length === 0 || postalCode.trim().length > 20) {
    throw fail("INVALID_ARGUMENT", `${field} needs a postal_code (1 to 20 characters).`, { field });
  }
  return { countryCode: country.trim().toUpperCase(), postalCode: postalCode.trim() };
}

/** A picked option id (one of `fulfillment_options[].id`); `field` names the input for errors. */
export function optionIdOf(raw: unknown, field: string): string {
  if (typeof raw !== "string" || !isUuid(raw)) throw fail("INVALID_ARGUMENT", `${field} must be the id of one of the session's fulfillment options.`, { field });
  return raw.toLowerCase();
}

/**
 * Records `dest` and the picked options on the cart (no destination: nothing recorded, the stores' domestic default
 * applies; `clear`: the request cleared the session's address, so the destination and picks the cart has are dropped
 * first with `clearShipping`, review A-8, else it went on quoting for the old address) and previews it. A store still waiting for the destination or a pick, or not shipping there, is answered
 * as `missing` rather than thrown; every other refusal (stock, a paid cart, an option not offered) is thrown, with
 * `details.field` renamed to the protocol's `optionField` for a bad option.
 */
export async function priceCart(
  svc: Services,
  keyId: string,
  cartId: string,
  dest: Destination | null,
  optionIds: string[],
  fields: { address: string; option: string },
  clear = false,
): Promise<Priced> {
  let rates: ShippingRatesView | null = null;
  if (!dest && clear) await svc.actors.ask(cartActor, cartId, "clearShipping", { keyId });
  if (dest) {
    for (const optionId of optionIds.length ? optionIds : [undefined]) {
      try {
        rates = await svc.actors.ask(cartActor, cartId, "selectShipping", { keyId, shipping: { ...dest, ...(optionId ? { optionId } : {}) } });
      } catch (err) {
        if (err instanceof ActorError && err.code === "INVALID_ARGUMENT" && optionId) {
          throw fail("INVALID_ARGUMENT", `${fields.option} ${optionId} is not one of the fulfillment options for this destination.`, { field: fields.option });
        }
        throw err;
      }
    }
  } else if (optionIds.length) {
    throw fail("MISSING_REQUIRED_ARGUMENT", `A fulfillment option is picked for a destination: send ${fields.address} (country, postal_code) with it.`, { field: fields.address });
  }
  const groups: ShippingGroup[] = (rates?.merchants ?? []).map((m) => ({ merchant_slug: m.merchant_slug, shippable: m.shippable, selected_option_id: m.selected_option_id, options: m.options }));
  const destination = dest ? { country_code: dest.countryCode, postal_code: dest.postalCode } : null;
  try {
    const preview = await svc.actors.ask(cartActor, cartId, "preview", { keyId });
    // Without a destination the session's stores quote their domestic default, which names no option (the cart's
    // quote has no zone: its cost is in the totals, docs/protocols.md "Shipping"), so nothing is listed; a cart that
    // got a destination through another route (a REST preview with `shipping`) shows the option its quote names.
    const shown = rates ? groups : preview.merchants.flatMap((m) => (m.shipping_option ? [{ merchant_slug: m.merchant_slug, shippable: true, selected_option_id: m.shipping_option.option_id, options: [{ ...m.shipping_option, cost: m.shipping, cost_minor: m.shipping_minor, free: m.shipping_minor === 0 }] }] : []));
    return { cart: preview, previewStatus: preview.status, shipping: { destination, groups: shown, missing: null } };
  } catch (err) {
    const missing = missingOf(err, fields);
    if (!missing) throw err;
    return { cart: await getCart(svc, keyId, cartId), previewStatus: null, shipping: { destination, groups, missing } };
  }
}

/** The shipping step a preview or a payment refused for, in the bridge's words, or null for any other error. */
export function missingOf(err: unknown, fields: { address: string; option: string }): ShippingMissing | null {
  if (!(err instanceof ActorError)) return null;
  const d = asRecord(err.details);
  const slugs = Array.isArray(d.merchant_slugs) ? d.merchant_slugs.filter((s): s is string => typeof s === "string") : [];
  let reason: ShippingMissing["reason"];
  if (err.code === "NOT_ELIGIBLE" && d.reason === "destination_not_served") reason = "destination_not_served";
  else if (err.code !== "PRECONDITION_NOT_MET" || d.required_step !== "get_shipping_rates") return null;
  else reason = d.reason === "shipping_option_required" ? "shipping_option_required" : "shipping_destination_required";
  return { reason, field: reason === "shipping_option_required" ? "option" : "address", merchant_slugs: slugs, message: missingMessage(reason, slugs, fields) };
}

/**
 * What a missing shipping step tells the agent, naming the request fields of the protocol (and API version) it is
 * answered in: a session created in one ACP version and read in another names the reader's fields.
 */
export function missingMessage(reason: ShippingMissing["reason"], slugs: readonly string[], fields: { address: string; option: string }): string {
  const stores = slugs.join(", ") || "a store of the cart";
  if (reason === "destination_not_served") return `${stores} does not ship to this address; update ${fields.address} with another one.`;
  if (reason === "shipping_option_required") return `${stores} ships by more than one method: update the session with ${fields.option} (one of the fulfillment options).`;
  return `${stores} quotes shipping by destination: update the session with ${fields.address} (country and postal_code).`;
}

/** A completion refused for shipping, as the protocol's own step (not MCP's get_shipping_rates). */
export function bridgeShippingError(err: unknown, fields: { address: string; option: string }): unknown {
  const missing = missingOf(err, fields);
  if (!missing || !(err instanceof ActorError)) return err;
  return new ActorError(err.code, missing.message, { ...err.details, reason: missing.reason, field: missing.field === "address" ? fields.address : fields.option, required_step: "update_checkout_session" });
}

/** The shipping kept on a session (none yet: no destination, no options, nothing missing). */
export function sessionShipping(s: { meta: Record<string, unknown> }): SessionShipping {
  const raw = asRecord(s.meta.shipping);
  return {
    destination: (raw.destination as SessionShipping["destination"] | undefined) ?? null,
    groups: Array.isArray(raw.groups) ? (raw.groups as ShippingGroup[]) : [],
    missing: (raw.missing as ShippingMissing | undefined) ?? null,
  };
}

/**
 * The session's shipping as an answer shows it with the cart `cart`: the options quoted by its last create or update,
 * each store's selected option as the cart has it now. The cart is the one writer of the pick, and the agent may pick
 * on the session's cart through another route (a REST preview with `shipping`, MCP get_shipping_rates): its totals and
 * payment then follow that pick, while the session showed the one its own last update recorded beside totals carrying
 * the other option's cost (helper E, session 20). A cart pick that is not among the quoted options shows no selection
 * rather than a stale one. A preview's answer (create, update) was quoted with the pick it shows, so it is kept.
 */
export function shownShipping(s: { meta: Record<string, unknown> }, cart: CartView | PreviewView): SessionShipping {
  const ship = sessionShipping(s);
  const picks = "shipping" in cart ? cart.shipping?.selected_options : undefined;
  if (!picks) return ship;
  const groups = ship.groups.map((g) => {
    const pick = picks[g.merchant_slug];
    if (pick === undefined || pick === g.selected_option_id) return g;
    return { ...g, selected_option_id: g.options.some((o) => o.option_id === pick) ? pick : null };
  });
  return { ...ship, groups };
}

/** The destination recorded on a session, for re-pricing a new cart of it. */
export function sessionDestination(s: { meta: Record<string, unknown> }): Destination | null {
  const d = sessionShipping(s).destination;
  return d ? { countryCode: d.country_code, postalCode: d.postal_code } : null;
}

/**
 * The cart's destination when it is not the one the session recorded, else null: the agent gave the session's cart
 * another address through REST (a preview with `shipping`) or MCP (get_shipping_rates). The cart is the one writer of
 * the destination and its totals and payment follow it, while the session kept showing its own address and the options
 * quoted for it (helper E, session 20). Noticing costs nothing: every answer reads the cart, whose view carries its
 * destination; only a change is re-quoted (`followCartDestination`), never every read.
 */
export function movedDestination(s: { meta: Record<string, unknown> }, cart: CartView | PreviewView): Destination | null {
  const c = "shipping" in cart ? cart.shipping : null;
  if (!c) return null;
  const d = sessionShipping(s).destination;
  if (d && d.country_code === c.country_code && d.postal_code === c.postal_code) return null;
  return { countryCode: c.country_code, postalCode: c.postal_code };
}

/** What the session still waits for after a quote of `rates` (none, a destination a store does not serve, a pick). */
function missingOfRates(rates: ShippingRatesView, fields: { address: string; option: string }): ShippingMissing | null {
  const refused = rates.merchants.filter((m) => !m.shippable).map((m) => m.merchant_slug);
  if (refused.length) return { reason: "destination_not_served", field: "address", merchant_slugs: refused, message: missingMessage("destination_not_served", refused, fields) };
  const unpicked = rates.merchants.filter((m) => m.selected_option_id === null && m.options.length > 0).map((m) => m.merchant_slug);
  if (unpicked.length) return { reason: "shipping_option_required", field: "option", merchant_slugs: unpicked, message: missingMessage("shipping_option_required", unpicked, fields) };
  return null;
}

/**
 * When the session's cart has another destination than the session (`movedDestination`), the session takes the cart's:
 * its shipping is quoted again for it (the options each store offers there, the cart's picks, what is missing) and an
 * ACP address becomes that destination (the recipient's `name` kept; street and city belonged to the old address, so
 * they are not shown beside another country and postal code). The quote is the cart's own `selectShipping` with the
 * destination the cart already has and no pick: the cart's choices stay as they are (`chooseShipping` keeps each
 * store's pick that still serves the destination), so it changes nothing on the cart and reopens no preview. The one
 * exception is a pick whose zone the merchant has replaced since: the cart then records the store's new choice, as its
 * next preview would. Changes `s.meta` in memory and answers true when it did; a quote the cart refuses (a replaced
 * cart, or one whose revision moved past the view's: the agent moved it again meanwhile) leaves the session as it
 * was, logged. The caller saves (`saveFollowedShipping` on a read; an update's own save).
 */
export async function followCartDestination(svc: Services, s: BridgeSession, cart: CartView | PreviewView, fields: { address: string; option: string }): Promise<boolean> {
  const dest = movedDestination(s, cart);
  if (!dest) return false;
  let rates: ShippingRatesView;
  try {
    // Under the revision of the view the destination was read from (review R, session 21): this quote is a cart write,
    // and a cart the agent moved again since (a REST preview, MCP get_shipping_rates) refuses it instead of being moved
    // back by a read; the session then shows its own until the next answer notices where the cart ships now.
    const expectedRevision = "revision" in cart ? cart.revision : undefined;
    rates = await svc.actors.ask(cartActor, s.cartId, "selectShipping", { keyId: s.agentKeyId, shipping: dest, ...(expectedRevision ? { expectedRevision } : {}) });
  } catch (err) {
    svc.log.warn("bridge: the destination of the session's cart changed and could not be quoted; the session shows its own", { protocol: s.protocol, error: err instanceof Error ? err.message : String(err) });
    return false;
  }
  const groups: ShippingGroup[] = rates.merchants.map((m) => ({ merchant_slug: m.merchant_slug, shippable: m.shippable, selected_option_id: m.selected_option_id, options: m.options }));
  s.meta.shipping = { destination: { country_code: dest.countryCode, postal_code: dest.postalCode }, groups, missing: missingOfRates(rates, fields) } satisfies SessionShipping;
  if (s.protocol === "acp") {
    const name = asRecord(s.meta.fulfillment_address).name;
    s.meta.fulfillment_address = { ...(typeof name === "string" ? { name } : {}), country: dest.countryCode, postal_code: dest.postalCode };
    delete s.meta.fulfillment_option_id; // the cart's picks are shown (`shownShipping`)
  }
  return true;
}
