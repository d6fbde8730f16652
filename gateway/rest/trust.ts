/**
 * Trust endpoints.
 *
 * Public (30 requests/min/IP, "public-rest" layer): GET /trust/methodology, GET /stores/{slug}/trust-score.
 * Agent key: GET /agent/merchants/{slug}/trust-explanation (404 for unknown or ineligible merchants).
 * Store owner (Bearer JWT): POST /trust/appeal. Operator (Bearer JWT, role operator): /admin/trust/*.
 *
 * Engine selection is per request: the latest score's database facts are stored with one signature per engine, the
 * pure engines are re-run over those facts at their computation time (same numbers every time) and the flags in force
 * for this request pick the overall number and the breakdown. Writes go through the trust actor; reads of its
 * committed rows (latest score, history, alerts, appeals) do not need its turn.
 */
import { strictJsonBody } from "./strict-body.ts";
import { Elysia, t, type Static } from "elysia";
import {
  ALERT_COLUMNS,
  APPEAL_COLUMNS,
  alertView,
  appealView,
  scoreFromFacts,
  trustActor,
  TRUST_ACTOR_ID,
  type StoreScore,
} from "../../actors/trust/index.ts";
import { AGENT_THRESHOLD, SUSPENSION_THRESHOLD, displayBand, legacyLevel, agentCheckoutAllowed } from "../../actors/trust/bands.ts";
import { explainTrust, TREND_WINDOW_DAYS } from "../../actors/trust/explain.ts";
import { readTrustHistory } from "../../actors/trust/history.ts";
import type { StoreFacts } from "../../actors/trust/inputs.ts";
import { methodologyDocument } from "../../actors/trust/methodology.ts";
import type { TrustFlags } from "../../actors/trust/select.ts";
import { METHODOLOGY_VERSION } from "../../actors/trust/types.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { isStoreEligible, type VerificationLevel } from "../../search/ranking.ts";
import { unstorableField } from "../../actors/store/ingest.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { admitAnonymous, agentAuth, clientIp, requireOperator, userAuth, type UserPrincipal } from "../plugins/auth.ts";
import { HTTP_URL_PATTERN, NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import type { Services } from "../services.ts";
import { noBody, optionalObjectBody } from "./optional-body.ts";
import { isStoreSlug, storeSlugSchema } from "../../actors/store/slug.ts";

const Slug = storeSlugSchema();
const bearer = [{ bearer: [] }];
const RECOMPUTE_TIMEOUT_MS = 10 * 60_000;

type Headers = Record<string, string | number>;

function flagsOf(svc: Services): TrustFlags {
  return {
    TRUST_SCORE_PUBLIC_V41_ENABLED: svc.config.TRUST_SCORE_PUBLIC_V41_ENABLED,
    TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: svc.config.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED,
  };
}

interface CurrentRow {
  computed_at: Date;
  facts: StoreFacts;
  jws_v41: string | null;
  jws_v2: string;
  signed_at: Date;
  expires_at: Date;
}

interface Current {
  row: CurrentRow;
  score: StoreScore;
}

async function readCurrent(svc: Services, slug: string): Promise<CurrentRow | null> {
  const [row] = await svc.sql<CurrentRow[]>`
    SELECT computed_at, facts, jws_v41, jws_v2, signed_at, expires_at FROM trust_current WHERE store_slug = ${slug}`;
  return row ?? null;
}

/**
 * The store's latest score with the flags of this request. A store never scored (or whose signatures have all
 * expired because refreshes kept failing) is scored once on demand, so a number is always returned.
 */
export async function currentScore(svc: Services, slug: string): Promise<Current> {
  let row = await readCurrent(svc, slug);
  if (!row || row.expires_at.getTime() <= svc.clock.now()) {
    await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "recompute", { slug, trigger: "on_demand" }, { timeoutMs: 30_000 });
    row = await readCurrent(svc, slug);
    if (!row) throw fail("store_not_found", `No store ${slug}.`);
  }
  return { row, score: scoreFromFacts(row.facts, row.computed_at.getTime(), flagsOf(svc)) };
}

async function nextRefreshAt(svc: Services, computedAt: Date): Promise<string> {
  const [r] = await svc.sql<{ due_at: Date }[]>`
    SELECT due_at FROM actor_reminders WHERE kind = ${trustActor.kind} AND id = ${TRUST_ACTOR_ID} AND name = 'refreshAll'`;
  return (r?.due_at ?? new Date(computedAt.getTime() + svc.config.TRUST_REFRESH_INTERVAL_MS)).toISOString();
}

function kidOf(jws: string): string | null {
  try {
    const header = JSON.parse(Buffer.from(jws.split(".")[0] ?? "", "base64url").toString("utf8")) as { kid?: unknown };
    return typeof header.kid === "string" ? header.kid : null;
  } catch {
    return null;
  }
}

async function publicLimit(svc: Services, request: Request, server: Parameters<typeof clientIp>[1], headers: Headers): Promise<void> {
  await admitAnonymous(svc, "public-rest", clientIp(request, server), headers);
}

const TrustScoreData = t.Object({
  store_slug: t.String(),
  score: t.Number({ description: "The published number on the 0..100 scale (a v2 number is its 0..1 value × 100)." }),
  scale: t.Object({ min: t.Literal(0), max: t.Literal(100) }),
  score_0to1: t.Number({ description: "The same number on the 0..1 scale used by thresholds, bands and statuses." }),
  engines: t.Object({ overall: t.Union([t.Literal("v41"), t.Literal("v2")]), breakdown: t.Union([t.Literal("v41"), t.Literal("v2")]) }),
  confidence_level: t.String(),
  tier: t.String(),
  model_version: t.String({ description: "4.1.0 for a v4.1 number, 2.0 for the v2 fallback." }),
  methodology_version: t.String(),
  display_band: t.String(),
  operational_status: t.String(),
  legacy_level: t.String({ description: "Deprecated ladder; use display_band and operational_status." }),
  agent_checkout_allowed: t.Boolean(),
  thresholds: t.Object({ agent_threshold: t.Number(), suspension_threshold: t.Number() }),
  components: t.Unknown({ description: "v4.1 dimensions and signals, or the 12 v2 components (engines.breakdown says which)." }),
  jws: t.String({ description: "Compact JWS (EdDSA/Ed25519) over the score; keys at /.well-known/jwks.json." }),
  kid: t.Union([t.String(), t.Null()]),
  signed_at: t.String({ format: "date-time", description: "Asserted by the issuer only (qtsp.enabled = false)." }),
  expires_at: t.String({ format: "date-time" }),
  computed_at: t.String({ format: "date-time" }),
  next_refresh_at: t.String({ format: "date-time" }),
  jwks_url: t.String(),
});

/** Public, unauthenticated reads. */
export function trustPublicRoutes(svc: Services) {
  return new Elysia({ name: "trust-public-routes" })
    .get(
      "/api/v1/trust/methodology",
      async ({ request, server, set }) => {
        await publicLimit(svc, request, server, set.headers as Headers);
        return ok(methodologyDocument(), {
          deprecated: { v41_methodology: "alias of the top-level fields, kept for older clients; read the top-level fields" },
        });
      },
      {
        response: { 200: SuccessEnvelope(t.Record(t.String(), t.Unknown())), ...errorResponses(429) },
        detail: {
          tags: ["trust"],
          summary: "Trust score methodology (version 4.1.0)",
          description:
            "Top-level: version, scale, suspension_threshold 0.2, agent_threshold 0.7, tiers, dimensions and signal weights, v2 components, display bands, operational statuses, interval rule and the deprecated legacy ladder. `v41_methodology` is a deprecated alias of the top-level fields.",
        },
      },
    )
    .get(
      "/api/v1/stores/:slug/trust-score",
      async ({ params, request, server, set }) => {
        await publicLimit(svc, request, server, set.headers as Headers);
        const [store] = await svc.sql<{ verification_level: VerificationLevel }[]>`SELECT verification_level FROM stores WHERE slug = ${params.slug}`;
        if (!store) throw fail("store_not_found", `No store ${params.slug}.`);
        const { row, score } = await currentScore(svc, params.slug);
        const sel = score.selected;
        const jws = sel.engines.overall === "v41" && row.jws_v41 ? row.jws_v41 : row.jws_v2;
        return ok({
          store_slug: params.slug,
          score: sel.score0to100,
          scale: { min: 0 as const, max: 100 as const },
          score_0to1: sel.score0to1,
          engines: sel.engines,
          confidence_level: sel.confidence_level,
          tier: score.v41.tier,
          model_version: sel.modelVersion,
          methodology_version: METHODOLOGY_VERSION,
          display_band: displayBand(sel.score0to1),
          operational_status: score.status,
          legacy_level: legacyLevel(sel.score0to1),
          agent_checkout_allowed: agentCheckoutOpen(sel.score0to1, store.verification_level, score.status),
          thresholds: { agent_threshold: AGENT_THRESHOLD, suspension_threshold: SUSPENSION_THRESHOLD },
          components: sel.breakdown,
          jws,
          kid: kidOf(jws),
          signed_at: row.signed_at.toISOString(),
          expires_at: row.expires_at.toISOString(),
          computed_at: row.computed_at.toISOString(),
          next_refresh_at: await nextRefreshAt(svc, row.computed_at),
          jwks_url: `${svc.siteUrl}/.well-known/jwks.json`,
        });
      },
      {
        params: t.Object({ slug: Slug }),
        response: { 200: SuccessEnvelope(TrustScoreData), ...errorResponses(400, 404, 429) },
        detail: {
          tags: ["trust"],
          summary: "A merchant's signed trust score",
          description:
            "The number comes from v4.1 when TRUST_SCORE_PUBLIC_V41_ENABLED is on and v4.1 produced one, else from v2; the breakdown is v4.1 only when TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED is also on. `engines` says which. Public: 30 requests per minute per IP.",
        },
      },
    );
}

/**
 * Whether an agent's checkout at the store goes ahead on its trust: the store is eligible (BASIC or higher, trust >=
 * 0.3, not suspended or hidden: what every agent read and the cart's assertStoresPayable apply), at or above the
 * agent-checkout threshold, and active. The public trust score and the merchant dashboard show it (audit B-1: an
 * UNVERIFIED store over 0.7 was shown open to agent checkout while every cart there was refused).
 */
export function agentCheckoutOpen(score0to1: number, verificationLevel: VerificationLevel, status: string): boolean {
  return (
    isStoreEligible({ trustScore: score0to1, verificationLevel, storeStatus: status as "active" }) &&
    agentCheckoutAllowed(score0to1) &&
    status === "active"
  );
}

/**
 * A merchant's trust explanation: REST `GET /agent/merchants/{slug}/trust-explanation` and MCP get_trust_explanation
 * give this same object (audit M-6: the tool had its own copy without score, engines, confidence_level,
 * operational_status, the trend's delta and window, and the machine-readable recommendation_code). Eligibility is
 * the caller's to check.
 */
export async function trustExplanation(svc: Services, slug: string) {
  const { row, score } = await currentScore(svc, slug);
  const now = svc.clock.now();
  const points = await readTrustHistory(svc.sql, slug, new Date(now - TREND_WINDOW_DAYS * 86_400_000));
  const sel = score.selected;
  const ex = explainTrust(sel, points, now);
  return {
    merchant: slug,
    trust_score: sel.score0to1,
    score: sel.score0to100,
    engines: sel.engines,
    confidence_level: sel.confidence_level,
    display_band: displayBand(sel.score0to1),
    operational_status: score.status,
    strengths: ex.strengths,
    weaknesses: ex.weaknesses,
    trend: ex.trend,
    trend_delta_0to1: ex.trendDelta0to1,
    trend_window_days: TREND_WINDOW_DAYS,
    recommendation: ex.recommendation,
    recommendation_code: ex.recommendationCode,
    computed_at: row.computed_at.toISOString(),
  };
}

/** Agent-key reads. */
export function trustAgentRoutes(svc: Services) {
  return new Elysia({ name: "trust-agent-routes" }).use(agentAuth(svc)).get(
    "/api/v1/agent/merchants/:slug/trust-explanation",
    async ({ params }) => {
      const eligible = async (): Promise<boolean> => {
        const [s] = await svc.sql<{ trust_score: string | null; verification_level: VerificationLevel; operational_status: "active" | "deprioritized" | "hidden" | "suspended" }[]>`
          SELECT trust_score, verification_level, operational_status FROM stores WHERE slug = ${params.slug}`;
        return (
          !!s &&
          isStoreEligible({
            trustScore: s.trust_score === null ? null : Number(s.trust_score),
            verificationLevel: s.verification_level,
            storeStatus: s.operational_status,
          })
        );
      };
      const notFound = () => fail("store_not_found", "Merchant not found or not eligible.");
      // Not in the stores table's slug format: names no store (and a NUL byte must not reach SQL as a 500).
      if (!isStoreSlug(params.slug)) throw notFound();
      if (!(await eligible())) throw notFound();
      const view = await trustExplanation(svc, params.slug);
      // An on-demand first score may have moved the store below eligibility.
      if (!(await eligible())) throw notFound();
      return ok(view);
    },
    {
      params: t.Object({ slug: t.String({ minLength: 1 }) }),
      response: errorResponses(401, 403, 404, 429),
      detail: {
        tags: ["trust"],
        summary: "Why a merchant has its trust score",
        description: "Strengths, weaknesses, trend over 30 days of history and a recommendation, derived from the published components. 404 for unknown or ineligible merchants.",
        security: [{ agentApiKey: [] }],
      },
    },
  );
}

/**
 * Text Postgres cannot store as sent (a lone UTF-16 surrogate: postgres.js writes U+FFFD in its place, so the appeal
 * was stored altered with a 201) is 400 naming the field, as every merchant text is (audit W-10; the schemas' no-NUL
 * pattern covered the NUL only).
 */
function refuseUnstorable(value: string, field: string): void {
  const unstorable = unstorableField(value, field);
  if (unstorable) throw fail("validation_error", `${field} ${unstorable.message}.`, { location: "body", field });
}

const APPEAL_REASON_MIN = 10;
const AppealBody = t.Object({
  storeSlug: Slug,
  reason: t.String({ minLength: APPEAL_REASON_MIN, maxLength: 2000, pattern: NO_NUL_PATTERN, description: "10 to 2000 characters once leading and trailing white space is removed (it is stored trimmed)." }),
  // http(s) only: the operator's appeal list shows these as links (a javascript: URL was stored and served; audit A2-F7)
  evidenceUrls: t.Optional(t.Array(t.String({ format: "uri", maxLength: 2048, pattern: HTTP_URL_PATTERN, description: "An http or https URL." }), { maxItems: 10 })),
});

const AlertResolveBody = t.Object({
  resolution: t.Union([t.Literal("confirmed_legitimate"), t.Literal("confirmed_manipulation"), t.Literal("dismissed")]),
  note: t.String({ minLength: 1, maxLength: 2000, pattern: NO_NUL_PATTERN }),
});
const AppealResolveBody = t.Object({
  decision: t.Union([t.Literal("upheld"), t.Literal("rejected")]),
  note: t.String({ minLength: 1, maxLength: 2000, pattern: NO_NUL_PATTERN }),
  recompute: t.Optional(t.Boolean({ description: "Recompute the store's score right after the decision." })),
});
const RecomputeBody = t.Optional(t.Object({ slug: t.Optional(Slug) }));

/**
 * The store's owner, or an operator, may file and read the store's appeals; another merchant's store is 403 (slugs and
 * scores are public, docs/decisions.md), an unknown one 404.
 */
async function assertAppealAccess(svc: Services, user: UserPrincipal, slug: string, refusal: string): Promise<void> {
  const [store] = await svc.sql<{ owner_user_id: string | null }[]>`SELECT owner_user_id FROM stores WHERE slug = ${slug}`;
  if (!store) throw fail("store_not_found", `No store ${slug}.`);
  if (user.role !== "operator" && store.owner_user_id !== user.id) throw fail("forbidden", refusal);
}

/** Appeals a store may have listed at once (one is open at a time; the rest are decided ones). */
const STORE_APPEALS_LIMIT = 100;

/** Merchant appeals and operator tools (Bearer JWT). */
export function trustUserRoutes(svc: Services) {
  const statusQuery = t.Object({ status: t.Optional(t.Union([t.Literal("open"), t.Literal("resolved"), t.Literal("all")])) });
  // The operator's lists are paged like every other list (limit 1-200, default 50; meta {total, limit, offset}): they
  // answered at most 500 rows with total = the rows answered, so past 500 the rest could not be read (helper F).
  const pagedStatusQuery = t.Composite([
    statusQuery,
    t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })), offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })) }),
  ]);
  /** One page of an operator's trust list (`order` ends with the id, so pages of rows of one instant neither repeat nor skip) and the exact total. */
  async function operatorPage<R>(table: "trust_anomaly_alerts" | "trust_appeals", columns: string, order: string, query: Static<typeof pagedStatusQuery>) {
    const status = query.status ?? "open";
    const limit = query.limit ?? 50;
    const offset = query.offset ?? 0;
    const where = status === "all" ? "" : "WHERE status = $1";
    const params = status === "all" ? [] : [status];
    const [rows, [count]] = await Promise.all([
      svc.sql.unsafe<R[]>(`SELECT ${columns} FROM ${table} ${where} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`, params),
      svc.sql.unsafe<{ total: number }[]>(`SELECT count(*)::int AS total FROM ${table} ${where}`, params),
    ]);
    return { rows, meta: { total: count?.total ?? 0, limit, offset } };
  }
  return new Elysia({ name: "trust-user-routes" })
    .use(userAuth(svc))
    .post(
      "/api/v1/trust/appeal",
      async ({ body, user, set }) => {
        // The length bounds hold for the text itself, not its padding (audit A4 L5: ten spaces were accepted).
        refuseUnstorable(body.reason, "reason");
        const reason = body.reason.trim();
        if (reason.length < APPEAL_REASON_MIN) {
          throw fail("validation_error", `reason must hold at least ${APPEAL_REASON_MIN} characters besides leading and trailing white space.`, { field: "reason" });
        }
        await assertAppealAccess(svc, user, body.storeSlug, "Only the store's owner can appeal its trust score.");
        const appeal = await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "fileAppeal", {
          storeSlug: body.storeSlug,
          userId: user.id,
          reason,
          evidenceUrls: body.evidenceUrls ?? [],
        });
        set.status = 201;
        return ok(appeal);
      },
      {
        ...strictJsonBody(AppealBody),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: {
          tags: ["trust"],
          summary: "Dispute your store's trust score",
          description: "Recorded with a review due date 72 hours later; an operator resolves it. One open appeal per store at a time (409 otherwise).",
          security: bearer,
        },
      },
    )
    .get(
      "/api/v1/trust/appeals",
      async ({ query, user }) => {
        await assertAppealAccess(svc, user, query.storeSlug, "Only the store's owner can read its trust appeals.");
        const rows = await svc.sql.unsafe<Parameters<typeof appealView>[0][]>(
          `SELECT ${APPEAL_COLUMNS} FROM trust_appeals WHERE store_slug = $1 ORDER BY filed_at DESC, id LIMIT ${STORE_APPEALS_LIMIT}`,
          [query.storeSlug],
        );
        return ok(rows.map(appealView), { total: rows.length });
      },
      {
        query: t.Object({ storeSlug: Slug }),
        response: errorResponses(400, 401, 403, 404),
        detail: {
          tags: ["trust"],
          summary: "Your store's trust appeals and their outcome",
          description: `Newest first (at most ${STORE_APPEALS_LIMIT}): status open or resolved, the operator's decision (upheld or rejected) and note once resolved.`,
          security: bearer,
        },
      },
    )
    .post(
      "/api/v1/admin/trust/recompute",
      async ({ body, user }) => {
        requireOperator(user);
        const slug = body?.slug;
        const summary = slug
          ? await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "recompute", { slug, trigger: "operator" }, { timeoutMs: RECOMPUTE_TIMEOUT_MS })
          : await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "recomputeAll", { trigger: "operator" }, { timeoutMs: RECOMPUTE_TIMEOUT_MS });
        return ok(summary);
      },
      {
        parse: optionalObjectBody,
        // a misspelt `slg` recomputed every store instead of one (audit W-7)
        ...strictJsonBody(RecomputeBody),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["admin"], summary: "Recompute every store's trust score now (or one store's)", security: bearer },
      },
    )
    .post(
      "/api/v1/admin/trust/keys/rotate",
      async ({ user }) => {
        requireOperator(user);
        return ok(await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "rotateKey", {}));
      },
      {
        // takes no body: none or {}; any key is 400 naming it (as the webhook enable/disable routes, helper C session 21)
        ...noBody(),
        response: errorResponses(401, 403),
        detail: { tags: ["admin"], summary: "Rotate the trust signing key (the old key stays published until its signatures expire)", security: bearer },
      },
    )
    .get(
      "/api/v1/admin/trust/alerts",
      async ({ query, user }) => {
        requireOperator(user);
        const page = await operatorPage<Parameters<typeof alertView>[0]>("trust_anomaly_alerts", ALERT_COLUMNS, "detected_at DESC, id", query);
        return ok(page.rows.map(alertView), page.meta);
      },
      {
        query: pagedStatusQuery,
        response: errorResponses(400, 401, 403),
        detail: {
          tags: ["admin"],
          summary: "Trust anomaly alerts (default: open), newest first, paged",
          description: "Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset.",
          security: bearer,
        },
      },
    )
    .post(
      "/api/v1/admin/trust/alerts/:id/resolve",
      async ({ params, body, user }) => {
        requireOperator(user);
        refuseUnstorable(body.note, "note");
        return ok(await svc.actors.ask(trustActor, TRUST_ACTOR_ID, "resolveAlert", { id: params.id, userId: user.id, resolution: body.resolution, note: body.note }));
      },
      {
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        ...strictJsonBody(AlertResolveBody),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: { tags: ["admin"], summary: "Resolve a trust anomaly alert", security: bearer },
      },
    )
    .get(
      "/api/v1/admin/trust/appeals",
      async ({ query, user }) => {
        requireOperator(user);
        const page = await operatorPage<Parameters<typeof appealView>[0]>("trust_appeals", APPEAL_COLUMNS, "review_due_at, id", query);
        return ok(page.rows.map(appealView), page.meta);
      },
      {
        query: pagedStatusQuery,
        response: errorResponses(400, 401, 403),
        detail: {
          tags: ["admin"],
          summary: "Trust appeals, oldest due first (default: open), paged",
          description: "Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset.",
          security: bearer,
        },
      },
    )
    .post(
      "/api/v1/admin/trust/appeals/:id/resolve",
      async ({ params, body, user }) => {
        requireOperator(user);
        refuseUnstorable(body.note, "note");
        return ok(
          await svc.actors.ask(
            trustActor,
            TRUST_ACTOR_ID,
            "resolveAppeal",
            { id: params.id, userId: user.id, decision: body.decision, note: body.note, recompute: body.recompute ?? false },
            { timeoutMs: 30_000 },
          ),
        );
      },
      {
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        // `recompte: true` was dropped and the score not recomputed (audit W-7): unknown keys are 400 naming them
        ...strictJsonBody(AppealResolveBody),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: { tags: ["admin"], summary: "Resolve a trust appeal", security: bearer },
      },
    );
}
