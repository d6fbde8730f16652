/**
 * Review Y-1 (session 17, c9ba83b): the merchant facilitator's name lookup had no deadline. x402Availability runs on
 * the protocols page, MCP get_supported_protocols, every checkout and every /health refresh (anyStoreX402Usable), and
 * a facilitator whose DNS hangs held them for the resolver's own timeouts; the facilitator client looked the name up
 * before its deadline started. Now: availability waits at most X402_AVAILABILITY_LOOKUP_MS (then: unresolvable right
 * now, not refused), caches the verdict per URL for X402_VET_CACHE_MS and refreshes it in the background; the client's
 * lookup is inside the exchange's deadline and bounded (UPSTREAM_UNAVAILABLE unreachable, settle not_attempted).
 * (The first test is the reviewer's, /tmp/notes/Y-tests/y1-x402-availability-dns-bounded.test.ts.)
 */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { X402_AVAILABILITY_LOOKUP_MS, X402_VET_CACHE_MS, x402Availability, type StoreX402Config } from "../../actors/payments/x402-config.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { Resolver } from "../../infra/ssrf.ts";
import { createFacilitatorClient, FACILITATOR_LOOKUP_MS } from "../../infra/x402/facilitator-client.ts";

const store = (facilitatorUrl: string): StoreX402Config => ({
  storeSlug: "demo-store",
  payTo: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
  network: "eip155:84532",
  asset: { address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2", decimals: 6 },
  facilitatorUrl,
  facilitatorVersion: "v2",
  maxTimeoutSeconds: 300,
  rpcUrl: null,
});
const hangs: Resolver = () => new Promise(() => {});
const strict = { allowlist: "", allowPrivate: false };

afterEach(() => {
  setSystemTime();
});

describe("x402Availability: the facilitator's DNS is bounded and cached", () => {
  test("a resolver that never answers does not hold the answer past 3 s", async () => {
    const started = Date.now();
    const out = await Promise.race([
      x402Availability("demo-store", store("https://facilitator.example"), { ...strict, resolve: hangs }),
      new Promise<"hung">((r) => setTimeout(() => r("hung"), 3_000)),
    ]);
    expect(out).not.toBe("hung");
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 10_000);

  test("past the bound the name counts as unresolvable right now: usable (not refused), within about X402_AVAILABILITY_LOOKUP_MS", async () => {
    const started = Date.now();
    const a = await x402Availability("demo-store", store("https://hangs.example"), { ...strict, resolve: hangs });
    expect(a).toMatchObject({ usable: true, reason: null, facilitatorUrl: "https://hangs.example" });
    expect(Date.now() - started).toBeLessThan(X402_AVAILABILITY_LOOKUP_MS + 500);
  });

  test("the verdict is cached per URL: concurrent and later calls share one lookup; a slow name costs its first sight only", async () => {
    let lookups = 0;
    const slowPrivate: Resolver = async () => {
      lookups++;
      await Bun.sleep(200);
      return [{ address: "10.1.2.3", family: 4 }];
    };
    const policy = { ...strict, resolve: slowPrivate };
    const first = await Promise.all(Array.from({ length: 5 }, () => x402Availability("demo-store", store("https://private.example"), policy)));
    for (const a of first) expect(a.reason).toBe("facilitator_not_public");
    expect(lookups).toBe(1);
    const started = Date.now();
    expect((await x402Availability("demo-store", store("https://private.example"), policy)).reason).toBe("facilitator_not_public");
    expect(Date.now() - started).toBeLessThan(50);
    expect(lookups).toBe(1);
  });

  test("a verdict older than X402_VET_CACHE_MS is still answered at once while one lookup refreshes it in the background", async () => {
    let address = "93.184.216.34";
    let lookups = 0;
    const changing: Resolver = async () => {
      lookups++;
      await Bun.sleep(100);
      return [{ address, family: 4 }];
    };
    const policy = { ...strict, resolve: changing };
    const url = "https://moves.example";
    expect((await x402Availability("demo-store", store(url), policy)).usable).toBe(true);
    address = "10.0.0.7"; // the name now points inside
    setSystemTime(new Date(Date.now() + X402_VET_CACHE_MS + 1_000));
    const started = performance.now();
    expect((await x402Availability("demo-store", store(url), policy)).usable).toBe(true); // the stale verdict, at once
    expect(performance.now() - started).toBeLessThan(50);
    await Bun.sleep(300); // the background refresh
    expect(lookups).toBe(2);
    expect((await x402Availability("demo-store", store(url), policy)).reason).toBe("facilitator_not_public");
    expect(lookups).toBe(2);
  });
});

describe("the facilitator client: the lookup is bounded and inside the deadline", () => {
  const payload = { x402Version: 2, accepted: { scheme: "exact", network: "eip155:84532" }, payload: {} } as unknown as PaymentPayload;
  const requirements = { scheme: "exact", network: "eip155:84532", asset: "0xc", amount: "1", payTo: "0xb", maxTimeoutSeconds: 300, extra: {} } as PaymentRequirements;
  const thrown = async (p: Promise<unknown>): Promise<ActorError> => {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ActorError);
    return err as ActorError;
  };

  test("a /settle whose facilitator name never resolves: 503 UPSTREAM_UNAVAILABLE unreachable, not_attempted, within the deadline", async () => {
    const client = createFacilitatorClient({ url: "https://hangs.example", timeoutMs: 600, allowPrivate: false, resolve: hangs });
    const started = Date.now();
    const err = await thrown(client.settle(payload, requirements));
    expect(Date.now() - started).toBeLessThan(1_200);
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toMatchObject({ operation: "settle", reason: "unreachable", cause: "lookup_timeout", settlement: "not_attempted" });
  }, 10_000);

  test("with a long deadline the lookup is still bounded by FACILITATOR_LOOKUP_MS (a /verify: unreachable)", async () => {
    const client = createFacilitatorClient({ url: "https://hangs.example", timeoutMs: 30_000, allowPrivate: false, resolve: hangs });
    const started = Date.now();
    const err = await thrown(client.verify(payload, requirements));
    expect(Date.now() - started).toBeLessThan(FACILITATOR_LOOKUP_MS + 700);
    expect(err.details).toMatchObject({ operation: "verify", reason: "unreachable", cause: "lookup_timeout" });
    expect(err.details?.settlement).toBeUndefined();
  }, 10_000);
});
