/**
 * A fuzz test of the whole REST surface, driven by the served OpenAPI document. The developers' guide promises: "Bad
 * input always gets the spec's error envelope (REST) with the right status/code, never a 500, a stack trace or a hang".
 * For every operation of /api/v1/openapi.json (REST, the ACP/UCP/AP2 bridges, OAuth) this sends a fixed number of
 * fast-check requests (test/helpers/openapi-fuzz.ts) — valid-looking ones from the operation's schemas and mutated
 * ones — with the right credentials or sometimes none or the wrong ones, and checks every answer: no 5xx beyond the
 * documented ones, the surface's error shape on every 4xx, no stack trace, an X-Request-Id, a documented status and
 * code, and a 2xx that validates against the documented schema. Nothing may take longer than the timeout.
 *
 * Deterministic: the seed is fixed (FUZZ_SEED overrides it, FUZZ_RUNS the runs per operation; FUZZ_LOG=1 prints every
 * problem with a curl reproduction). What the run finds and is not fixed yet is listed in KNOWN below with the
 * finding's reference in /tmp/notes/F1-report.md (docs/review.md once merged), so the test passes and fails on any new
 * kind of problem.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, placeOrder, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import {
  checkAnswer,
  operationsOf,
  reproduction,
  requestsFor,
  ResponseValidator,
  seedFor,
  send,
  type Credentials,
  type DocOperation,
  type FuzzAnswer,
  type FuzzRequest,
  type KnownValues,
  type OpenApiDoc,
  type Problem,
  type ProblemKind,
  type Seed,
} from "../helpers/openapi-fuzz.ts";
import { buildSeeds, NOT_SEEDED } from "../helpers/openapi-fuzz-state.ts";
import { BOARD, GREEN } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
/**
 * A request without an answer in this time is a hang (a finding). Generous: CI runs two test files at once on 2 cores,
 * where a log-in's argon2 hash alone took 3.6 s (review V3-2); a real hang never answers.
 */
const TIMEOUT_MS = 20_000;
/** Operations fuzzed at once (each one's requests in order), to keep the run near 30 s on a 2-core machine. */
const CONCURRENCY = 4;

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, MOCK
const EU_SHOP = "0009e996-50d6-53b9-8529-d5e0bdaf69d1"; // qualified-eu-shop

/**
 * Operations not fuzzed, and why. None shut the service down; these would change what every other operation answers
 * in an order that depends on scheduling, making the run's findings unrepeatable:
 */
const SKIP: Record<string, string> = {
  // switches the search engine or its weights for the whole service (a Meilisearch URL that does not answer turns
  // every search into a 503); its own validation is covered by test/http/admin-search-settings.test.ts
  "PUT /api/v1/admin/search/settings": "changes search for every other request",
};

/** Runs per operation where each request is costly (an argon2id check per log-in). */
const RUNS_FOR: Record<string, number> = {
  "POST /api/v1/auth/login": 10,
  "POST /api/v1/oauth/authorize": 12,
};

interface Known {
  kind: ProblemKind;
  /** the operation's key, or "*" for a problem of the HTTP server below every operation */
  op: string;
  status: number;
  code?: string;
  /** the finding in the report */
  finding: string;
}

/**
 * Problems this run finds that are not fixed yet (each one is a finding in the report). Matched on kind, operation,
 * status and (when given) code, so a new kind of problem — or the same one on another operation — fails the test.
 */
const KNOWN: Known[] = [
  // F1-5: a request head over Bun's 16 KiB limit is answered 431 by the HTTP server itself: empty body, no X-Request-Id
  ...(["no-request-id", "error-shape", "undocumented-status"] as const).map((kind): Known => ({ kind, op: "*", status: 431, finding: "F1-5: Bun's own 431 for a request head over 16 KiB" })),
];

function isKnown(p: Problem): Known | undefined {
  return KNOWN.find((k) => k.kind === p.kind && (k.op === "*" || k.op === p.op) && k.status === p.status && (k.code === undefined || k.code === p.code));
}

let srv: TestServer;
let doc: OpenApiDoc;
let ops: DocOperation[] = [];
const results: { d: DocOperation; r: FuzzRequest; a: FuzzAnswer }[] = [];
const problems: Problem[] = [];
let elapsedMs = 0;
let seeds: Record<string, Seed[]> = {};

async function knownValues(key: TestKey, spare: TestKey, merchant: Record<string, string>): Promise<KnownValues> {
  const H = key.headers;
  // several open carts and sessions: checkouts and completes use them up
  const more = await Promise.all(
    Array.from({ length: 4 }, async () => ({
      cart: (await srv.json("/api/v1/agent/cart", { method: "POST", headers: H, body: { items: [{ product_id: SKILLET, quantity: 1 }] } })).body?.data?.id as string | undefined,
      acp: (await srv.json(ACP, { method: "POST", headers: { ...H, "api-version": "2025-09-29" }, body: { items: [{ id: BOARD, quantity: 1 }] } })).body?.id as string | undefined,
      ucp: (await srv.json(UCP, { method: "POST", headers: H, body: { line_items: [{ item: { id: BOARD }, quantity: 1 }] } })).body?.id as string | undefined,
    })),
  );
  const ids = (k: "cart" | "acp" | "ucp") => more.map((m) => m[k]).filter((v): v is string => typeof v === "string");
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: H, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  const preview = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: H, body: { cartId: cart.body.data.id } });
  const orderId = await placeOrder(srv, key, SKILLET);
  const refund = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: H, body: { amount: 1 } });
  const acp = await srv.json(ACP, { method: "POST", headers: { ...H, "api-version": "2025-09-29" }, body: { items: [{ id: BOARD, quantity: 1 }] } });
  const ucp = await srv.json(UCP, { method: "POST", headers: H, body: { line_items: [{ item: { id: BOARD }, quantity: 1 }] } });
  const hook = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { method: "POST", headers: merchant, body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] } });
  const coupons = await srv.json("/api/v1/merchant/stores/demo-store/coupons", { headers: merchant });
  for (const [what, r, want] of [
    ["cart", cart, 201],
    ["preview", preview, 200],
    ["refund", refund, 201],
    ["acp", acp, 201],
    ["ucp", ucp, 201],
    ["webhook", hook, 201],
    ["coupons", coupons, 200],
  ] as const) {
    if (r.status !== want) throw new Error(`set-up ${what}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const codes = ((coupons.body.data?.coupons ?? coupons.body.data ?? []) as { code?: string }[]).map((c) => c.code).filter((c): c is string => typeof c === "string");
  return {
    products: [SKILLET, BOARD, GREEN, EU_SHOP],
    carts: [cart.body.data.id, ...ids("cart")],
    orders: [orderId],
    checkoutSessions: [preview.body.data.checkout_session_id],
    acpSessions: [acp.body.id, ...ids("acp")],
    ucpSessions: [ucp.body.id, ...ids("ucp")],
    webhooks: [hook.body.data.id],
    refunds: [refund.body.data.refund_id],
    spareKeys: [spare.id],
    coupons: codes.length ? codes : ["SAVE10"],
    slugs: ["demo-store"],
  };
}

beforeAll(async () => {
  // rate limits off: a 429 would hide what the request would have reached (the limits have their own tests)
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const adminToken = await login(srv);
  // the demo seed makes the operator demo-store's owner (infra/seed/demo.ts); another store's owner is the wrong merchant
  const foreignToken = await login(srv, merchantLogin("greenleaf-living"));
  const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: adminToken });
  const spare = await createKey(srv, { scopes: ALL_SCOPES, token: adminToken });
  const creds: Credentials = {
    agent: key.headers,
    merchant: { authorization: `Bearer ${adminToken}` },
    admin: { authorization: `Bearer ${adminToken}` },
    foreign: { authorization: `Bearer ${foreignToken}` },
  };
  const known = await knownValues(key, spare, creds.merchant);
  // coherent state for the operations whose success path needs several steps (test/helpers/openapi-fuzz-state.ts)
  seeds = await buildSeeds({ srv, key, adminToken, foreignToken });
  known.seeds = seeds;
  const r = await srv.json<OpenApiDoc>("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
  ops = operationsOf(doc);
  const validator = new ResponseValidator(doc);

  const queue = ops.filter((d) => !(d.key in SKIP));
  const t0 = performance.now();
  const worker = async () => {
    for (let d = queue.shift(); d; d = queue.shift()) {
      for (const req of requestsFor(d, doc, known, creds, seedFor(SEED, d.key), RUNS_FOR[d.key] ?? RUNS)) {
        const a = await send(srv.url, req, TIMEOUT_MS);
        results.push({ d, r: req, a });
        problems.push(...checkAnswer(d, req, a, validator));
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  elapsedMs = performance.now() - t0;
  if (process.env.FUZZ_COVERAGE) console.log(coverageTable());
  if (process.env.FUZZ_LOG) {
    for (const p of problems) console.log(`${isKnown(p) ? "known" : "NEW  "} ${p.kind} ${p.op} ${p.status} ${p.code ?? ""} [${p.request.kind}] ${p.detail.slice(0, 200)}\n      ${reproduction(srv.url, p.request)}`);
    const byOp = new Map<string, Map<string, number>>();
    for (const x of results) {
      const m = byOp.get(x.d.key) ?? new Map<string, number>();
      const k = `${x.r.kind}:${x.a.status}:${(x.a.json as { code?: string } | undefined)?.code ?? ""}`;
      m.set(k, (m.get(k) ?? 0) + 1);
      byOp.set(x.d.key, m);
    }
    const firstValid400 = new Set<string>();
    for (const x of results) {
      if (x.r.kind !== "valid" || x.a.status !== 400 || firstValid400.has(x.d.key)) continue;
      firstValid400.add(x.d.key);
      console.log(`VALID400 ${x.d.key} ${x.r.body?.slice(0, 300)} ${x.r.url.slice(0, 100)} => ${x.a.text.slice(0, 250)}`);
    }
    for (const x of results) if (x.a.status === 405 || x.a.status === 413 || x.a.ms > 1500) console.log(`ODD ${x.a.status} ${Math.round(x.a.ms)}ms ${x.d.key} ${reproduction(srv.url, x.r, 150)} => ${x.a.text.slice(0, 200)}`);
    for (const [op, m] of byOp) console.log(`STATS ${op} ${[...m].sort().map(([k, n]) => `${k}×${n}`).join(" ")}`);
    console.log(`${results.length} requests in ${Math.round(elapsedMs)} ms`);
  }
}, 180_000);

afterAll(async () => {
  await srv?.stop();
});

/** Whether an answer is one of the operation's documented successes (a 2xx, or a documented redirect). */
function isSuccess(x: { d: DocOperation; a: FuzzAnswer }): boolean {
  return (x.a.status >= 200 && x.a.status < 300) || (x.a.status >= 300 && x.a.status < 400 && !!x.d.op.responses?.[String(x.a.status)]);
}

/** The operations (of those fuzzed) that were answered a documented success at least once. */
function succeededOps(): Set<string> {
  return new Set(results.filter(isSuccess).map((x) => x.d.key));
}

/**
 * FUZZ_COVERAGE=1: which operations never got a 2xx, with what their valid-looking requests were answered instead
 * (status:code, most frequent first), and the totals. What is left is a success path the generator does not reach.
 */
function coverageTable(): string {
  const ok = succeededOps();
  const fuzzed = ops.filter((d) => !(d.key in SKIP));
  const lines = [`coverage: ${ok.size}/${fuzzed.length} operations answered a documented success (${results.length} requests in ${Math.round(elapsedMs)} ms)`];
  for (const d of fuzzed) {
    if (ok.has(d.key)) continue;
    const seen = new Map<string, number>();
    for (const x of results) {
      if (x.d !== d || (x.r.kind !== "valid" && x.r.kind !== "seeded")) continue;
      const k = `${x.a.status}:${(x.a.json as { code?: string } | undefined)?.code ?? ""}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    const why = NOT_SEEDED[d.key] ? ` (${NOT_SEEDED[d.key]})` : "";
    lines.push(`  none  ${d.key.padEnd(70)} ${[...seen].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}×${n}`).join(" ")}${why}`);
  }
  return lines.join("\n");
}

/** The problems of `kinds` not on the known list, one line per (kind, operation, status, code) with a reproduction. */
function unexplained(...kinds: ProblemKind[]): string[] {
  const seen = new Map<string, string>();
  for (const p of problems) {
    if (!kinds.includes(p.kind) || isKnown(p)) continue;
    const id = `${p.kind} ${p.op} ${p.status} ${p.code ?? ""}`;
    if (!seen.has(id)) seen.set(id, `${id}: ${p.detail.slice(0, 160)} — ${reproduction(srv.url, p.request, 120)}`);
  }
  return [...seen.values()];
}

describe("the fuzzer's checks can fail", () => {
  test("a 500, a stack trace, a missing X-Request-Id, a bare-text 4xx, an undocumented status and an off-schema 2xx are each flagged", () => {
    const v = new ResponseValidator(doc);
    const d = ops.find((o) => o.key === "GET /api/v1/trust/methodology")!;
    const req: FuzzRequest = { kind: "valid", method: "GET", url: "/api/v1/trust/methodology", headers: {} };
    const answer = (status: number, text: string, headers: Record<string, string> = { "x-request-id": "r", "content-type": "application/json" }): FuzzAnswer => {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status, headers: new Headers(headers), text, json, ms: 1 };
    };
    const kinds = (a: FuzzAnswer) => checkAnswer(d, req, a, v).map((p) => p.kind);
    expect(kinds(answer(500, '{"success":false,"error":"x","code":"internal_error"}'))).toContain("server-error");
    expect(kinds(answer(400, '{"success":false,"error":"boom\n    at handler (/work/main/gateway/x.ts:1:2)","code":"validation_error"}'))).toContain("stack-trace");
    expect(kinds(answer(200, "{}", {}))).toContain("no-request-id");
    expect(kinds(answer(404, "not found", { "x-request-id": "r", "content-type": "text/plain" }))).toEqual(expect.arrayContaining(["error-shape", "undocumented-status"]));
    expect(kinds(answer(200, '{"success":true,"data":42}'))).toContain("success-schema");
    expect(kinds({ ...answer(0, ""), failure: "no answer in 5000 ms" })).toEqual(["hang"]);
  });
});

describe("fuzzing every operation of the OpenAPI document", () => {
  test("every operation of the document was sent requests, valid-looking and bad, with answers of several kinds", () => {
    const fuzzed = new Set(results.map((x) => x.d.key));
    expect(ops.length).toBeGreaterThan(90);
    expect(ops.filter((d) => !fuzzed.has(d.key) && !(d.key in SKIP)).map((d) => d.key)).toEqual([]);
    const kinds = new Set<string>(results.map((x) => x.r.kind));
    for (const k of ["valid", "mutated", "raw-body", "content-type", "path", "query", "auth"]) expect(kinds.has(k)).toBe(true);
    // with the coherent state (test/helpers/openapi-fuzz-state.ts) every seeded operation's success path is reached,
    // and nine in ten operations in all (93 of 96 when seeded; NOT_SEEDED names the ones left with the reason, and
    // FUZZ_COVERAGE=1 prints what each operation without a success was answered)
    const succeeded = succeededOps();
    expect(Object.keys(seeds).filter((k) => !succeeded.has(k))).toEqual([]);
    const fuzzedOps = ops.filter((d) => !(d.key in SKIP));
    expect(fuzzedOps.filter((d) => succeeded.has(d.key)).length).toBeGreaterThanOrEqual(Math.ceil(fuzzedOps.length * 0.9));
  });

  test("no request hangs: every one is answered within the timeout", () => {
    expect(unexplained("hang")).toEqual([]);
  });

  test("no answer is a server error, beyond the documented 501 and a 502/503 with a documented code", () => {
    expect(unexplained("server-error")).toEqual([]);
  });

  test("no answer carries a stack trace or a source path", () => {
    expect(unexplained("stack-trace")).toEqual([]);
  });

  test("every answer carries an X-Request-Id", () => {
    expect(unexplained("no-request-id")).toEqual([]);
  });

  test("every 4xx is the surface's error shape: our envelope on REST and AP2, ACP's and UCP's own on their bridges", () => {
    expect(unexplained("error-shape")).toEqual([]);
  });

  test("every success answer validates against the operation's documented schema", () => {
    expect(unexplained("success-schema")).toEqual([]);
  });

  test("every status and error code answered is one the operation documents", () => {
    expect(unexplained("undocumented-status", "unlisted-code")).toEqual([]);
  });

  test("the service still answers after the run: the health probe is 200 and a valid search is served", async () => {
    expect((await srv.json("/api/v1/health")).status).toBe(200);
    const k = await createKey(srv, { scopes: ["search"] });
    const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: k.headers, body: { query: "skillet" } });
    expect(r.status).toBe(200);
  });

  test("the run stays bounded in time", () => {
    // the campaign, not the set-up: ~12 s alone, 38 s beside two busy loops (review V3-2); the hook allows 180 s
    expect(elapsedMs).toBeLessThan(150_000);
  });
});
