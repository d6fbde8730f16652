/**
 * Where an x402 payment goes and who settles it. The merchant's server-side configuration (`store_x402_config`)
 * is the source of truth: it overrides the caller's `x402_config` (spec, InitiateCheckoutRequest behaviour 5).
 *
 * - payTo: the merchant's configured wallet. A caller naming another `merchant_wallet_address` is refused
 *   (INVALID_ARGUMENT, reason merchant_wallet_mismatch) when SPEC005_X402_CONFIG_ENFORCED is true, otherwise
 *   logged and overridden. A store without a server-side configuration cannot be paid over x402
 *   (PAYMENT_METHOD_NOT_CONFIGURED): we never complete a merchant's order against an address only the caller
 *   named (docs/decisions.md).
 * - network / asset: the merchant's; a different caller value is logged and overridden.
 * - facilitator: the merchant's configured facilitator, else the caller's `facilitator_url` if it is on the
 *   allowlist (X402_FACILITATOR_ALLOWLIST plus the merchant's own facilitator). Nothing else is ever fetched. A
 *   store with neither cannot be paid over x402 (PAYMENT_METHOD_NOT_CONFIGURED, reason no_facilitator) and is not
 *   advertised as payable (x402Availability); a refused facilitator names the allowed ones.
 *   Outside the operator allowlist a URL also passes the SSRF guard unless ALLOW_PRIVATE_URLS: in `x402Availability`,
 *   so the protocols page, /health and the checkout agree (audit B-4, session 17), and again on every request the
 *   facilitator client makes (infra/x402/facilitator-client.ts, `facilitatorMayBePrivate`).
 */
import type { PaymentRequirements } from "@x402/core/types";
import type { Sql } from "../../infra/db.ts";
import type { Logger } from "../../infra/log.ts";
import { assertPublicUrl, systemResolver, type Resolver } from "../../infra/ssrf.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import { buildPaymentRequirements, DEFAULT_MAX_TIMEOUT_SECONDS, toAssetAmount, type X402Asset } from "./x402-challenge.ts";

export type FacilitatorVersion = "v1" | "v2";

export interface StoreX402Config {
  storeSlug: string;
  payTo: string;
  network: string;
  asset: X402Asset;
  facilitatorUrl: string | null;
  facilitatorVersion: FacilitatorVersion;
  maxTimeoutSeconds: number;
  rpcUrl: string | null;
}

/** The request's `x402_config` (spec field names). */
export interface CallerX402Config {
  merchant_wallet_address?: string;
  network?: string;
  facilitator_url?: string;
  asset_address?: string;
  facilitator_version?: FacilitatorVersion;
}

export interface EffectiveX402Config extends StoreX402Config {
  facilitatorUrl: string;
  /** Whether the facilitator client may call a private or loopback address for it (`facilitatorMayBePrivate`). */
  facilitatorAllowPrivate: boolean;
  /** Caller fields the merchant's configuration replaced (observed, logged). */
  overridden: string[];
}

export interface X402Policy {
  /** SPEC005_X402_CONFIG_ENFORCED */
  enforced: boolean;
  /** X402_FACILITATOR_ALLOWLIST (comma-separated). */
  allowlist: string;
  /** ALLOW_PRIVATE_URLS (refused in production by infra/config.ts) */
  allowPrivate: boolean;
}

/** What `x402Availability` needs of the policy: the allowlist, ALLOW_PRIVATE_URLS, and a resolver in tests. */
export interface X402AvailabilityPolicy {
  allowlist: string;
  allowPrivate: boolean;
  resolve?: Resolver;
}

interface Row {
  store_slug: string;
  pay_to: string;
  network: string;
  asset_address: string;
  asset_name: string;
  asset_version: string;
  asset_decimals: number;
  facilitator_url: string | null;
  facilitator_version: string;
  max_timeout_seconds: number;
  rpc_url: string | null;
}

export async function loadStoreX402Configs(sql: Sql, slugs: readonly string[]): Promise<Map<string, StoreX402Config>> {
  const out = new Map<string, StoreX402Config>();
  if (slugs.length === 0) return out;
  const rows = await sql<Row[]>`
    SELECT c.store_slug, c.pay_to, c.network, c.asset_address, c.asset_name, c.asset_version, c.asset_decimals, c.facilitator_url,
           c.facilitator_version, c.max_timeout_seconds, c.rpc_url
    FROM store_x402_config c WHERE c.store_slug IN ${sql([...slugs])}`;
  for (const r of rows) {
    out.set(r.store_slug, {
      storeSlug: r.store_slug,
      payTo: r.pay_to,
      network: r.network,
      asset: { address: r.asset_address, name: r.asset_name, version: r.asset_version, decimals: r.asset_decimals },
      facilitatorUrl: r.facilitator_url,
      facilitatorVersion: r.facilitator_version === "v1" ? "v1" : "v2",
      maxTimeoutSeconds: r.max_timeout_seconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
      rpcUrl: r.rpc_url,
    });
  }
  return out;
}

/** `scheme://host[:port]/path` without a trailing slash, or null for anything that is not http(s). */
export function normalizeFacilitatorUrl(input: string): string | null {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    return null;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return null;
  if (u.username || u.password || u.search || u.hash) return null;
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

/** An allowlist entry naming only an origin admits every path under it; one with a path admits exactly that URL. */
export function isAllowlisted(url: string, entries: readonly string[]): boolean {
  const norm = normalizeFacilitatorUrl(url);
  if (!norm) return false;
  const origin = new URL(norm).origin;
  return entries.some((raw) => {
    const e = normalizeFacilitatorUrl(raw);
    if (!e) return false;
    return e === norm || (e === new URL(e).origin && e === origin);
  });
}

export function parseAllowlist(csv: string): string[] {
  return csv
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Decimals of the currencies an x402 stablecoin leg may be priced in (USDC settles USD carts only). */
const X402_CURRENCIES: Record<string, number> = { USD: 2 };
/**
 * The cart currencies an x402 payment settles (the protocols page's x402 entry, `currencies`). A leg's currency is its
 * products' (the catalog takes any ISO currency per product, whatever `stores.currency` says), so it is judged per leg
 * at checkout (`legRequirements`), never by the store's currency (review Y-6, session 17).
 */
export const X402_SETTLED_CURRENCIES: readonly string[] = Object.keys(X402_CURRENCIES);

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Whether the facilitator client may reach a private or loopback address for `url`: with ALLOW_PRIVATE_URLS (never in
 * production), or when the operator's X402_FACILITATOR_ALLOWLIST names it (trusted as written, as it always was: a
 * self-hosted facilitator on the operator's own network). Anything else, a merchant's own facilitator above all, must
 * be a public https address on every request. Redirects are never followed either way.
 */
export function facilitatorMayBePrivate(url: string, policy: Pick<X402Policy, "allowlist" | "allowPrivate">): boolean {
  return policy.allowPrivate || isAllowlisted(url, parseAllowlist(policy.allowlist));
}

/**
 * How long the availability rule waits for a merchant facilitator's name (review Y-1, session 17): the protocols page,
 * MCP get_supported_protocols, every checkout and /health run the rule, and a facilitator whose DNS hangs must not hold
 * them for the resolver's own timeouts (glibc: 5 s per attempt, times retries and search domains). Past it the name
 * counts as unresolvable right now: not refused (the facilitator client finds it out at payment time).
 */
export const X402_AVAILABILITY_LOOKUP_MS = 1_000;
/**
 * How long a facilitator's verdict (refused or not by the SSRF guard) is reused, per URL. Past it the stale verdict is
 * still answered while one lookup refreshes it in the background, so only a URL's first sight waits (at most
 * X402_AVAILABILITY_LOOKUP_MS); /health's refresh every second costs its two SQL reads, no DNS. The facilitator client
 * vets the URL again on every request it makes, so a verdict up to a minute old never lets a request through.
 */
export const X402_VET_CACHE_MS = 60_000;
/** URLs whose verdict is kept, per resolver (the oldest forgotten first). */
const VET_CACHE_MAX = 1_000;

interface Verdict {
  /** null until the first lookup answers. */
  refused: boolean | null;
  at: number;
  /** The lookup in flight (the first, which callers wait for, or a background refresh). */
  pending: Promise<boolean> | null;
}
/** Per resolver (the system's in production; a test's own has its own), per facilitator URL. */
const verdicts = new WeakMap<Resolver, Map<string, Verdict>>();

/** The SSRF guard's verdict on `url`, looked up now (bounded). */
async function vetFacilitatorUrl(url: string, resolve: Resolver): Promise<boolean> {
  try {
    await assertPublicUrl(url, { resolve, lookupTimeoutMs: X402_AVAILABILITY_LOOKUP_MS });
    return false;
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    return err.details?.reason !== "unresolvable";
  }
}

/**
 * Whether the merchant's own facilitator URL may not be called: outside the operator's allowlist and without
 * ALLOW_PRIVATE_URLS it must pass the SSRF guard (https, every address it resolves to public). A name that does not
 * resolve right now, or not within X402_AVAILABILITY_LOOKUP_MS, is not refused here: like a facilitator that does not
 * answer, that is found out at payment time (503 UPSTREAM_UNAVAILABLE `unreachable`, retryable, nothing sent), not a
 * configuration to advertise as unusable. The guard's verdict is cached per URL (X402_VET_CACHE_MS).
 */
async function merchantFacilitatorRefused(url: string, policy: X402AvailabilityPolicy): Promise<boolean> {
  if (facilitatorMayBePrivate(url, policy)) return false;
  const resolve = policy.resolve ?? systemResolver;
  let cache = verdicts.get(resolve);
  if (!cache) verdicts.set(resolve, (cache = new Map()));
  const known = cache.get(url);
  if (known && known.refused !== null) {
    if (Date.now() - known.at >= X402_VET_CACHE_MS && !known.pending) {
      known.pending = vetFacilitatorUrl(url, resolve).then(
        (refused) => {
          Object.assign(known, { refused, at: Date.now(), pending: null });
          return refused;
        },
        () => {
          known.pending = null;
          return known.refused as boolean;
        },
      );
    }
    return known.refused;
  }
  if (known?.pending) return known.pending;
  const entry: Verdict = { refused: null, at: 0, pending: null };
  const map = cache;
  entry.pending = vetFacilitatorUrl(url, resolve).then(
    (refused) => {
      Object.assign(entry, { refused, at: Date.now(), pending: null });
      return refused;
    },
    (err: unknown) => {
      map.delete(url);
      throw err;
    },
  );
  map.set(url, entry);
  if (map.size > VET_CACHE_MAX) map.delete(map.keys().next().value as string);
  return entry.pending;
}

/**
 * Whether a store can be paid over x402 at all, and with which facilitator: the one thing the protocols page, the
 * health report and the checkout's refusals must agree on. A store needs its server-side configuration (wallet,
 * network, asset) and a facilitator: its own, or one on the operator's X402_FACILITATOR_ALLOWLIST that the caller
 * names. Without either, every x402 checkout would be refused whatever the agent sends, so it is not advertised. The
 * currency is not part of the rule: x402 settles the leg's currency (its products', X402_SETTLED_CURRENCIES), which
 * the store's own `stores.currency` does not decide (a EUR store may sell USD products); a leg in another currency is
 * refused at checkout by `legRequirements` (review Y-6, session 17). Its own facilitator overrides the caller's, so one
 * the SSRF guard refuses (outside the allowlist, without
 * ALLOW_PRIVATE_URLS: a private address, plain http) leaves the store unpayable too (`facilitator_not_public`; the
 * checkout's 409 STORE_NOT_CONFIGURED), and its URL is not shown.
 */
export interface X402Availability {
  usable: boolean;
  /** Why not usable: no server-side configuration, no facilitator (none configured, none allowed), or its own refused. */
  reason: "x402_not_configured" | "no_facilitator" | "facilitator_not_public" | null;
  message: string | null;
  /** The merchant's own facilitator (it overrides the caller's), if any and allowed. */
  facilitatorUrl: string | null;
  /** When the merchant has none: the facilitators a caller may name in x402_config.facilitator_url. */
  allowedFacilitators: string[];
}

export async function x402Availability(storeSlug: string, store: StoreX402Config | undefined, policy: X402AvailabilityPolicy): Promise<X402Availability> {
  const allowed = parseAllowlist(policy.allowlist);
  if (!store) {
    return { usable: false, reason: "x402_not_configured", message: `Merchant ${storeSlug} has no server-side x402 wallet configured.`, facilitatorUrl: null, allowedFacilitators: [] };
  }
  if (store.facilitatorUrl) {
    if (await merchantFacilitatorRefused(store.facilitatorUrl, policy)) {
      return {
        usable: false,
        reason: "facilitator_not_public",
        message: `Merchant ${storeSlug}'s x402 facilitator URL is not allowed (it must be a public https address), so no x402 payment can be settled here; pay by card instead.`,
        facilitatorUrl: null,
        allowedFacilitators: [],
      };
    }
    return { usable: true, reason: null, message: null, facilitatorUrl: store.facilitatorUrl, allowedFacilitators: [] };
  }
  if (allowed.length > 0) return { usable: true, reason: null, message: null, facilitatorUrl: null, allowedFacilitators: allowed };
  return {
    usable: false,
    reason: "no_facilitator",
    message:
      `Merchant ${storeSlug} has no x402 facilitator configured and the operator allows none (X402_FACILITATOR_ALLOWLIST is empty), ` +
      "so no x402 payment can be settled here; pay by card instead.",
    facilitatorUrl: null,
    allowedFacilitators: [],
  };
}

/**
 * Distinct merchant facilitators `anyStoreX402Usable` vets at most (in parallel, each verdict cached X402_VET_CACHE_MS;
 * /health caches the answer a second).
 */
const HEALTH_FACILITATORS_VETTED = 20;

/**
 * Is x402 payable at any store? (the health report's `protocols.x402`), by `x402Availability`'s rule: a store without
 * a facilitator of its own when the operator allows some, or one whose own facilitator may be called (the first
 * HEALTH_FACILITATORS_VETTED distinct ones are vetted).
 */
export async function anyStoreX402Usable(sql: Sql, policy: X402AvailabilityPolicy): Promise<boolean> {
  const anyAllowed = parseAllowlist(policy.allowlist).length > 0;
  const [r] = await sql<{ usable: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM store_x402_config c WHERE c.facilitator_url IS NULL AND ${anyAllowed}) AS usable`;
  if (r?.usable === true) return true;
  const own = await sql<{ facilitator_url: string }[]>`
    SELECT DISTINCT c.facilitator_url FROM store_x402_config c
    WHERE c.facilitator_url IS NOT NULL ORDER BY c.facilitator_url LIMIT ${HEALTH_FACILITATORS_VETTED}`;
  const refused = await Promise.all(own.map((row) => merchantFacilitatorRefused(row.facilitator_url, policy)));
  return refused.some((no) => !no);
}

/** The configuration an x402 payment to `store` uses, given the caller's `x402_config`. */
export async function resolveX402Config(input: {
  storeSlug: string;
  store: StoreX402Config | undefined;
  caller: CallerX402Config | undefined;
  policy: X402Policy;
  log?: Logger;
  /** DNS resolver for the SSRF guard (tests). */
  resolve?: Resolver;
}): Promise<EffectiveX402Config> {
  const { store, caller, policy, storeSlug } = input;
  const availability = await x402Availability(storeSlug, store, { ...policy, ...(input.resolve ? { resolve: input.resolve } : {}) });
  if (availability.reason === "facilitator_not_public") {
    throw fail("STORE_NOT_CONFIGURED", `Merchant ${storeSlug}'s facilitator URL is not allowed.`, { merchant_slug: storeSlug, reason: "facilitator_not_public" });
  }
  if (!store || !availability.usable) {
    throw fail("PAYMENT_METHOD_NOT_CONFIGURED", availability.message ?? `Merchant ${storeSlug} cannot be paid over x402.`, {
      merchant_slug: storeSlug,
      rail: "x402",
      reason: availability.reason,
      ...(availability.reason === "no_facilitator" ? { allowed_facilitators: [] } : {}),
    });
  }
  const overridden: string[] = [];
  if (caller?.merchant_wallet_address !== undefined && !sameAddress(caller.merchant_wallet_address, store.payTo)) {
    if (policy.enforced) {
      throw fail("INVALID_ARGUMENT", "x402_config.merchant_wallet_address does not match the merchant's configured wallet.", {
        field: "x402_config.merchant_wallet_address",
        reason: "merchant_wallet_mismatch",
        merchant_slug: storeSlug,
      });
    }
    overridden.push("merchant_wallet_address");
  }
  if (caller?.network !== undefined && caller.network !== store.network) overridden.push("network");
  if (caller?.asset_address !== undefined && !sameAddress(caller.asset_address, store.asset.address)) overridden.push("asset_address");
  if (caller?.facilitator_version !== undefined && caller.facilitator_version !== store.facilitatorVersion && store.facilitatorUrl) {
    overridden.push("facilitator_version");
  }

  const operatorList = parseAllowlist(policy.allowlist);
  let facilitatorUrl: string;
  let facilitatorVersion = store.facilitatorVersion;
  if (store.facilitatorUrl) {
    facilitatorUrl = store.facilitatorUrl;
    if (caller?.facilitator_url !== undefined && normalizeFacilitatorUrl(caller.facilitator_url) !== normalizeFacilitatorUrl(store.facilitatorUrl)) {
      overridden.push("facilitator_url");
    }
  } else {
    // The merchant has none, so the caller names one of the operator's (x402Availability made sure there is one).
    const asked = caller?.facilitator_url;
    const allowed = availability.allowedFacilitators;
    if (!asked) {
      throw fail("MISSING_REQUIRED_ARGUMENT", `x402_config.facilitator_url is required for this merchant; allowed: ${allowed.join(", ")}.`, {
        field: "x402_config.facilitator_url",
        allowed_facilitators: allowed,
      });
    }
    if (!isAllowlisted(asked, operatorList)) {
      throw fail("INVALID_ARGUMENT", `x402_config.facilitator_url is not an allowed facilitator; allowed: ${allowed.join(", ")}.`, {
        field: "x402_config.facilitator_url",
        reason: "facilitator_not_allowed",
        allowed_facilitators: allowed,
      });
    }
    facilitatorUrl = normalizeFacilitatorUrl(asked) as string;
    if (caller?.facilitator_version) facilitatorVersion = caller.facilitator_version;
  }
  // The operator's allowlist is trusted as written; a merchant-configured URL was vetted like any outside URL
  // (x402Availability above), and the facilitator client vets it again on every request.
  if (overridden.length > 0) {
    input.log?.warn("x402_config differs from the merchant's configuration; overridden", { merchantSlug: storeSlug, fields: overridden });
  }
  return { ...store, facilitatorUrl, facilitatorVersion, facilitatorAllowPrivate: facilitatorMayBePrivate(facilitatorUrl, policy), overridden };
}

/** The `PaymentRequirements` of one store's leg: the leg's total in the asset's atomic units, paid to the merchant. */
export function legRequirements(cfg: EffectiveX402Config, leg: { storeId: string; amountMinor: number; currency: string }): PaymentRequirements {
  const decimals = X402_CURRENCIES[leg.currency];
  if (decimals === undefined) {
    throw fail("PAYMENT_METHOD_NOT_CONFIGURED", `x402 settles ${Object.keys(X402_CURRENCIES).join(", ")} carts only.`, {
      merchant_slug: leg.storeId,
      rail: "x402",
      currency: leg.currency,
      reason: "currency_not_supported",
    });
  }
  return buildPaymentRequirements({
    network: cfg.network,
    asset: cfg.asset,
    amount: toAssetAmount(leg.amountMinor, decimals, cfg.asset.decimals),
    payTo: cfg.payTo,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    extra: { merchantSlug: leg.storeId },
  });
}
