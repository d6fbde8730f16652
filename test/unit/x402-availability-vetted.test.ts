/**
 * One rule for whether a store is payable over x402 (x402Availability, audit B-4, session 17): a merchant's own
 * facilitator that the SSRF guard refuses (outside the operator's allowlist, without ALLOW_PRIVATE_URLS) makes the
 * store unpayable, on the protocols page and /health as at checkout. The store's own currency does not: x402 settles
 * the leg's (its products'), refused per leg at checkout (review Y-6).
 */
import { describe, expect, test } from "bun:test";
import { facilitatorMayBePrivate, legRequirements, resolveX402Config, x402Availability, type StoreX402Config } from "../../actors/payments/x402-config.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { Resolver } from "../../infra/ssrf.ts";

const store = (facilitatorUrl: string | null): StoreX402Config => ({
  storeSlug: "demo-store",
  payTo: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
  network: "eip155:84532",
  asset: { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2", decimals: 6 },
  facilitatorUrl,
  facilitatorVersion: "v2",
  maxTimeoutSeconds: 300,
  rpcUrl: null,
});
const toPrivate: Resolver = async () => [{ address: "10.1.2.3", family: 4 }];
const toPublic: Resolver = async () => [{ address: "93.184.216.34", family: 4 }];
const strict = { allowlist: "", allowPrivate: false };

describe("x402Availability", () => {
  test("a merchant facilitator whose name resolves to a private address is not usable (facilitator_not_public), and not shown", async () => {
    const a = await x402Availability("demo-store", store("https://facilitator.example"), { ...strict, resolve: toPrivate });
    expect(a).toMatchObject({ usable: false, reason: "facilitator_not_public", facilitatorUrl: null, allowedFacilitators: [] });
    expect(a.message).toContain("public https");
  });

  test("plain http to a public address is refused too; https to a public address is usable", async () => {
    expect((await x402Availability("demo-store", store("http://facilitator.example"), { ...strict, resolve: toPublic })).reason).toBe("facilitator_not_public");
    expect(await x402Availability("demo-store", store("https://facilitator.example"), { ...strict, resolve: toPublic })).toMatchObject({
      usable: true,
      facilitatorUrl: "https://facilitator.example",
    });
  });

  test("ALLOW_PRIVATE_URLS, or the operator's allowlist naming it, admits a private facilitator (trusted as written)", async () => {
    expect((await x402Availability("demo-store", store("http://10.0.0.1:1"), { allowlist: "", allowPrivate: true })).usable).toBe(true);
    expect((await x402Availability("demo-store", store("http://10.0.0.1:1"), { allowlist: "http://10.0.0.1:1", allowPrivate: false })).usable).toBe(true);
    expect(facilitatorMayBePrivate("http://10.0.0.1:1/", { allowlist: "http://10.0.0.1:1", allowPrivate: false })).toBe(true);
    expect(facilitatorMayBePrivate("http://10.0.0.2:1", { allowlist: "http://10.0.0.1:1", allowPrivate: false })).toBe(false);
  });

  test("a name that does not resolve right now is not refused (found out at payment time: 503 unreachable, retryable)", async () => {
    const nowhere: Resolver = async () => Promise.reject(new Error("ENOTFOUND"));
    expect(await x402Availability("demo-store", store("https://facilitator.example"), { ...strict, resolve: nowhere })).toMatchObject({ usable: true, reason: null });
  });

  test("the checkout refuses by the same rule: 409 STORE_NOT_CONFIGURED facilitator_not_public; a EUR leg is 400 PAYMENT_METHOD_NOT_CONFIGURED currency_not_supported (legRequirements)", async () => {
    const policy = { ...strict, enforced: false };
    const refused = await resolveX402Config({ storeSlug: "demo-store", store: store("https://facilitator.example"), caller: undefined, policy, resolve: toPrivate }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ActorError);
    expect(refused).toMatchObject({ code: "STORE_NOT_CONFIGURED", details: { merchant_slug: "demo-store", reason: "facilitator_not_public" } });
    const cfg = await resolveX402Config({ storeSlug: "qualified-eu-shop", store: store(null), caller: { facilitator_url: "https://f.example" }, policy: { ...policy, allowlist: "https://f.example" } });
    const eur = (() => {
      try {
        return legRequirements(cfg, { storeId: "qualified-eu-shop", amountMinor: 1200, currency: "EUR" });
      } catch (e) {
        return e;
      }
    })();
    expect(eur).toMatchObject({ code: "PAYMENT_METHOD_NOT_CONFIGURED", details: { reason: "currency_not_supported", currency: "EUR" } });
    expect(legRequirements(cfg, { storeId: "qualified-eu-shop", amountMinor: 1200, currency: "USD" }).amount).toBe("12000000");
    const ok = await resolveX402Config({ storeSlug: "demo-store", store: store("https://facilitator.example"), caller: undefined, policy, resolve: toPublic });
    expect(ok).toMatchObject({ facilitatorUrl: "https://facilitator.example", facilitatorAllowPrivate: false });
  });
});
