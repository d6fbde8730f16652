/**
 * `trust/global`: the one trust actor. It owns the signing key set (signing_keys, purpose 'trust'), the durable
 * `refreshAll` reminder (every TRUST_REFRESH_INTERVAL_MS, 6 h by default), the append-only score history, the
 * latest signed score of each store, anomaly alerts and merchant appeals.
 *
 * A recompute walks the stores in batches of BATCH_SIZE: a few aggregate queries per batch (inputs.ts), the pure
 * engines, two signatures per store (one per engine that produced a number, so the gateway can honour the engine
 * flags per request), bulk writes, then a checkpoint so each batch commits on its own and its `trust.score`
 * events go out. At boot only the stores that have no computed score yet (a fresh seed, a store added while no
 * host ran), and those whose published number the engine configuration in force would not publish (a flag flipped
 * across the restart), are scored (`scoreUnscored`), so every surface shows and gates on one computed number from
 * the start; every other store keeps its stored score until the reminder (or an operator's request).
 *
 * The actor needs the key-encryption key and the engine flags, which live in the process's Services: the boot
 * hook hands them over with `configureTrust(sql, …)`, keyed by the host's pool so two servers in one process
 * (tests) never share them.
 */
import { defineActor, type ActorContext } from "../runtime/define-actor.ts";
import { fail, type ActorError } from "../runtime/errors.ts";
import type { Sql } from "../../infra/db.ts";
import type { BootHook } from "../../infra/boot-hooks.ts";
import { ANOMALY_WINDOW_HOURS, detectAnomalies, type RaisedAlert } from "./anomaly.ts";
import { agentCheckoutAllowed, operationalStatus, type OperationalStatus } from "./bands.ts";
import { computeV2, type V2Result } from "./engine-v2.ts";
import { computeV41, type V41Result } from "./engine-v41.ts";
import type { HistoryPoint } from "./explain.ts";
import { loadStoreFacts, toEngineInputs, verifiedEvidenceCount, type EngineInputs, type StoreFacts } from "./inputs.ts";
import { ensureTrustKey, loadTrustKeySet, retireDroppedKeys, saveTrustKeySet } from "./keys.ts";
import {
  EnsureScheduled,
  FileAppeal,
  Recompute,
  RecomputeAll,
  ResolveAlert,
  ResolveAppeal,
  RotateKey,
  ScoreUnscored,
  TRUST_ACTOR_ID,
  TRUST_SCORE_TOPIC,
  type AlertView,
  type AppealView,
  type RecomputeSummary,
  type RecomputeTrigger,
  type TrustScoreEvent,
} from "./messages.ts";
import { selectTrustScore, type SelectedTrustScore, type TrustFlags } from "./select.ts";
import { DEFAULT_SIGNATURE_TTL_SECONDS, TrustKeySet } from "./signing.ts";
import { round } from "./types.ts";

export { TRUST_ACTOR_ID, TRUST_SCORE_TOPIC, type TrustScoreEvent } from "./messages.ts";

export const BATCH_SIZE = 500;
/** Scheduled key rotation; the retired key stays published until its last signature expires (24 h). */
export const KEY_ROTATION_INTERVAL_MS = 30 * 86_400_000;
/** Spec: trust appeal review within 72 hours. */
export const APPEAL_REVIEW_HOURS = 72;
const HOUR_MS = 3_600_000;
/**
 * How long the boot waits for the stores without a computed score to be scored. Short on purpose: the boot scoring
 * is a nicety (one number from the start), never a reason for a process not to come up (review R3-1). 10,000
 * stores take under 10 s (bench/trust.ts).
 */
export const BOOT_SCORING_TIMEOUT_MS = 20_000;

export interface TrustRuntime {
  /** Key-encryption key sealing the private signing keys. */
  kek: Uint8Array;
  /** Flags in force when a score is computed (they decide stores.trust_score and the history row); read live. */
  flags: () => TrustFlags;
  intervalMs: number;
  /** `iss` of the trust JWS (audit A4 L3): the deployment's public origin (SITE_URL), read at signing time. */
  issuer?: () => string | undefined;
}

const runtimes = new WeakMap<object, TrustRuntime>();

/** Called by the boot hook of every process that hosts actors. */
export function configureTrust(sql: Sql, runtime: TrustRuntime): void {
  runtimes.set(sql, runtime);
}

interface TrustState {
  lastRefreshAt: string | null;
  lastRefreshStores: number;
  refreshRuns: number;
}

type Ctx = ActorContext<TrustState>;

function runtimeOf(ctx: Ctx): TrustRuntime {
  const rt = runtimes.get(ctx.sql);
  if (!rt) throw fail("actor_unavailable", "the trust actor is not configured yet (boot in progress)");
  return rt;
}

async function keySet(ctx: Ctx, rt: TrustRuntime): Promise<TrustKeySet> {
  let ks = ctx.memory.get("keys") as TrustKeySet | undefined;
  if (!ks) {
    ks = await loadTrustKeySet(ctx.sql, rt.kek, ctx.now());
    ctx.memory.set("keys", ks);
  }
  return ks;
}

// ---------------------------------------------------------------------------------------------------------------
// Pure scoring of one store

export interface StoreScore {
  inputs: EngineInputs;
  v41: V41Result;
  v2: V2Result;
  selected: SelectedTrustScore;
  status: OperationalStatus;
  verifiedEvidence: number;
}

/**
 * Engines over a store's stored facts at their computation time: the same numbers every time (pure, clock as an
 * argument), which is how the gateway re-selects engines per request without a second computation path.
 */
export function scoreFromFacts(facts: StoreFacts, computedAtMs: number, flags: TrustFlags): StoreScore {
  const inputs = toEngineInputs(facts, computedAtMs);
  const v41 = computeV41(inputs.v41, { now: computedAtMs });
  const v2 = computeV2(inputs.v2, computedAtMs);
  const selected = selectTrustScore({ v41, v2, flags });
  return { inputs, v41, v2, selected, status: operationalStatus(selected.score0to1), verifiedEvidence: verifiedEvidenceCount(inputs.v41) };
}

// ---------------------------------------------------------------------------------------------------------------
// Batches

interface BatchResult {
  stores: number;
  alerts: number;
}

/** Milliseconds spent per phase over a run (reported by the recompute summary and the bench). */
export interface RecomputeProfile {
  readMs: number;
  scoreMs: number;
  signMs: number;
  writeMs: number;
  commitMs: number;
}

type HistoryRow = { store_slug: string; computed_at: Date; score_0to1: string; engine: "v41" | "v2"; verified_evidence: number };

type RaisedAlertRow = { store_slug: string; kind: RaisedAlert["kind"]; engine: string; detected_at: Date; from_0to1: string; to_0to1: string };

interface BatchData {
  facts: Awaited<ReturnType<typeof loadStoreFacts>>;
  recent: HistoryRow[];
  raised: RaisedAlertRow[];
}

/** Everything a batch reads, in parallel queries on the pool (committed rows; no need for the turn's transaction). */
async function readBatch(ctx: Ctx, slugs: readonly string[], nowMs: number): Promise<BatchData> {
  const [facts, recent, raised] = await Promise.all([
    loadStoreFacts(ctx.sql, slugs, nowMs),
    ctx.sql<HistoryRow[]>`
      SELECT store_slug, computed_at, score_0to1, engine, verified_evidence FROM trust_score_history
      WHERE store_slug = ANY(${[...slugs]}) AND computed_at >= ${new Date(nowMs - 24 * HOUR_MS)} AND computed_at <= ${new Date(nowMs)}`,
    // Alerts already raised in the anomaly window, open or resolved: the same gain is alerted once (audit A4 M1).
    ctx.sql<RaisedAlertRow[]>`
      SELECT store_slug, kind, engine, detected_at, from_0to1, to_0to1 FROM trust_anomaly_alerts
      WHERE store_slug = ANY(${[...slugs]}) AND detected_at >= ${new Date(nowMs - ANOMALY_WINDOW_HOURS * HOUR_MS)} AND detected_at <= ${new Date(nowMs)}`,
  ]);
  return { facts, recent, raised };
}

async function recomputeBatch(
  ctx: Ctx,
  rt: TrustRuntime,
  keys: TrustKeySet,
  data: BatchData,
  nowMs: number,
  trigger: RecomputeTrigger,
  profile: RecomputeProfile,
): Promise<BatchResult> {
  const computedAt = new Date(nowMs).toISOString();
  const nowSec = Math.floor(nowMs / 1000);
  const flags = rt.flags();
  const { facts, recent, raised } = data;
  if (facts.size === 0) return { stores: 0, alerts: 0 };
  const present = [...facts.keys()];
  const historyBy = new Map<string, HistoryPoint[]>();
  for (const r of recent) {
    const list = historyBy.get(r.store_slug) ?? [];
    list.push({ at: r.computed_at.getTime(), score0to1: Number(r.score_0to1), engine: r.engine, verifiedEvidence: r.verified_evidence });
    historyBy.set(r.store_slug, list);
  }
  const raisedBy = new Map<string, RaisedAlert[]>();
  for (const r of raised) {
    const list = raisedBy.get(r.store_slug) ?? [];
    list.push({ kind: r.kind, engine: r.engine, at: r.detected_at.getTime(), from0to1: Number(r.from_0to1), to0to1: Number(r.to_0to1) });
    raisedBy.set(r.store_slug, list);
  }

  const history: Record<string, unknown>[] = [];
  const current: Record<string, unknown>[] = [];
  const alerts: { slug: string; alert: ReturnType<typeof detectAnomalies>[number]; engine: string }[] = [];
  const events: TrustScoreEvent[] = [];
  // The JWS carries whole seconds (iat/exp); the stored copies match it exactly.
  const signedAt = new Date(nowSec * 1000).toISOString();
  const expiresAt = new Date((nowSec + DEFAULT_SIGNATURE_TTL_SECONDS) * 1000).toISOString();

  const issuer = rt.issuer?.();
  const signOptions = issuer ? { now: nowSec, issuer } : { now: nowSec };
  const scoreStarted = performance.now();
  const signing: Promise<[string | null, string]>[] = [];
  for (const slug of present) {
    const f = facts.get(slug)!;
    const s = scoreFromFacts(f, nowMs, flags);
    const sel = s.selected;
    const point: HistoryPoint = { at: nowMs, score0to1: sel.score0to1, engine: sel.engines.overall, verifiedEvidence: s.verifiedEvidence };
    for (const alert of detectAnomalies(slug, historyBy.get(slug) ?? [], point, raisedBy.get(slug))) alerts.push({ slug, alert, engine: point.engine });

    // One signature per engine that produced a number: the gateway picks by the flags of each request.
    const v41Value = s.v41.value;
    signing.push(
      Promise.all([
        v41Value === null
          ? null
          : keys.signScore({ storeSlug: slug, score: round(v41Value, 2), scale: "0-100", engine: "v41", methodologyVersion: s.v41.methodologyVersion }, signOptions),
        keys.signScore(
          { storeSlug: slug, score: round(s.v2.score0to1 * 100, 2), scale: "0-100", engine: "v2", methodologyVersion: s.v2.modelVersion },
          signOptions,
        ),
      ]),
    );

    history.push({
      store_slug: slug,
      computed_at: computedAt,
      score_0to1: sel.score0to1,
      score_0to100: sel.score0to100,
      engine: sel.engines.overall,
      v41_score_0to100: v41Value,
      v41_tier: s.v41.tier,
      v2_score_0to1: s.v2.score0to1,
      operational_status: s.status,
      verified_evidence: s.verifiedEvidence,
      trigger,
    });
    current.push({ store_slug: slug, computed_at: computedAt, facts: f, signed_at: signedAt, expires_at: expiresAt });
    events.push({ slug, trustScore: sel.score0to1, operationalStatus: s.status, computedAt });
  }

  const scoreEnded = performance.now();
  // Signatures run concurrently (WebCrypto); awaited together once the batch is scored.
  const signatures = await Promise.all(signing);
  current.forEach((c, i) => {
    c.jws_v41 = signatures[i][0];
    c.jws_v2 = signatures[i][1];
  });
  profile.scoreMs += scoreEnded - scoreStarted;
  profile.signMs += performance.now() - scoreEnded;
  const writeStarted = performance.now();
  const tx = await ctx.tx();
  const ids = await tx<{ id: string; store_slug: string }[]>`
    INSERT INTO trust_score_history (store_slug, computed_at, score_0to1, score_0to100, engine, v41_score_0to100, v41_tier,
                                     v2_score_0to1, operational_status, verified_evidence, trigger)
    SELECT store_slug, computed_at, score_0to1, score_0to100, engine, v41_score_0to100, v41_tier, v2_score_0to1,
           operational_status, verified_evidence, trigger
    FROM jsonb_to_recordset(${JSON.stringify(history)}::text::jsonb) AS x(
      store_slug text, computed_at timestamptz, score_0to1 numeric, score_0to100 numeric, engine text, v41_score_0to100 numeric,
      v41_tier text, v2_score_0to1 numeric, operational_status text, verified_evidence integer, trigger text)
    RETURNING id, store_slug`;
  const idBy = new Map(ids.map((r) => [r.store_slug, r.id]));
  for (const c of current) c.history_id = idBy.get(c.store_slug as string);

  await tx`
    INSERT INTO trust_current (store_slug, history_id, computed_at, facts, jws_v41, jws_v2, signed_at, expires_at)
    SELECT store_slug, history_id, computed_at, facts, jws_v41, jws_v2, signed_at, expires_at
    FROM jsonb_to_recordset(${JSON.stringify(current)}::text::jsonb) AS x(
      store_slug text, history_id bigint, computed_at timestamptz, facts jsonb, jws_v41 text, jws_v2 text, signed_at timestamptz, expires_at timestamptz)
    ON CONFLICT (store_slug) DO UPDATE SET history_id = EXCLUDED.history_id, computed_at = EXCLUDED.computed_at,
      facts = EXCLUDED.facts, jws_v41 = EXCLUDED.jws_v41, jws_v2 = EXCLUDED.jws_v2, signed_at = EXCLUDED.signed_at,
      expires_at = EXCLUDED.expires_at`;

  await tx`
    UPDATE stores s SET trust_score = x.score, operational_status = x.status, updated_at = now()
    FROM jsonb_to_recordset(${JSON.stringify(events.map((e) => ({ slug: e.slug, score: e.trustScore, status: e.operationalStatus })))}::text::jsonb)
      AS x(slug text, score numeric, status text)
    WHERE s.slug = x.slug AND (s.trust_score IS DISTINCT FROM x.score OR s.operational_status IS DISTINCT FROM x.status)`;

  if (alerts.length > 0) {
    const rows = alerts.map(({ slug, alert, engine }) => ({
      store_slug: slug,
      kind: alert.kind,
      history_id: idBy.get(slug),
      detected_at: new Date(alert.at).toISOString(),
      engine,
      from_0to1: alert.from0to1,
      to_0to1: alert.to0to1,
      delta_0to1: alert.delta0to1,
      from_band: alert.fromBand,
      to_band: alert.toBand,
      window_hours: alert.windowHours,
    }));
    await tx`
      INSERT INTO trust_anomaly_alerts (store_slug, kind, history_id, detected_at, engine, from_0to1, to_0to1, delta_0to1, from_band, to_band, window_hours)
      SELECT store_slug, kind, history_id, detected_at, engine, from_0to1, to_0to1, delta_0to1, from_band, to_band, window_hours
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) AS x(
        store_slug text, kind text, history_id bigint, detected_at timestamptz, engine text, from_0to1 numeric, to_0to1 numeric,
        delta_0to1 numeric, from_band text, to_band text, window_hours integer)`;
    ctx.log.warn("trust anomaly alerts raised", { count: alerts.length, stores: [...new Set(alerts.map((a) => a.slug))].slice(0, 20) });
  }

  // The latest signature expiry of the active key, so a later rotation keeps it published long enough.
  await saveTrustKeySet(tx, rt.kek, keys);
  for (const e of events) ctx.publish(TRUST_SCORE_TOPIC, e);
  profile.writeMs += performance.now() - writeStarted;
  return { stores: present.length, alerts: alerts.length };
}

async function recomputeSlugs(ctx: Ctx, slugs: readonly string[], trigger: RecomputeTrigger): Promise<RecomputeSummary> {
  const rt = runtimeOf(ctx);
  const started = performance.now();
  const keys = await keySet(ctx, rt);
  const nowMs = ctx.now();
  const profile: RecomputeProfile = { readMs: 0, scoreMs: 0, signMs: 0, writeMs: 0, commitMs: 0 };
  const batches: string[][] = [];
  for (let i = 0; i < slugs.length; i += BATCH_SIZE) batches.push(slugs.slice(i, i + BATCH_SIZE));
  const timedRead = async (b: string[]): Promise<BatchData> => {
    const t = performance.now();
    const d = await readBatch(ctx, b, nowMs);
    profile.readMs += performance.now() - t;
    return d;
  };
  let stores = 0;
  let alerts = 0;
  // The next batch's reads run while this one is scored, signed and written.
  let next: Promise<BatchData> | undefined = batches.length ? timedRead(batches[0]) : undefined;
  for (let i = 0; i < batches.length; i++) {
    const data = await next!;
    next = i + 1 < batches.length ? timedRead(batches[i + 1]) : undefined;
    const r = await recomputeBatch(ctx, rt, keys, data, nowMs, trigger, profile);
    stores += r.stores;
    alerts += r.alerts;
    // Each batch commits on its own (and its events go out): a long run never holds one huge transaction.
    const t = performance.now();
    await ctx.checkpoint();
    profile.commitMs += performance.now() - t;
  }
  const round0 = (n: number) => Math.round(n);
  return {
    stores,
    alerts,
    batches: batches.length,
    computedAt: new Date(nowMs).toISOString(),
    durationMs: round0(performance.now() - started),
    profileMs: {
      readMs: round0(profile.readMs),
      scoreMs: round0(profile.scoreMs),
      signMs: round0(profile.signMs),
      writeMs: round0(profile.writeMs),
      commitMs: round0(profile.commitMs),
    },
  };
}

async function recomputeAllStores(ctx: Ctx, trigger: RecomputeTrigger): Promise<RecomputeSummary> {
  const rows = await ctx.sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug`;
  const summary = await recomputeSlugs(
    ctx,
    rows.map((r) => r.slug),
    trigger,
  );
  ctx.state.lastRefreshAt = summary.computedAt;
  ctx.state.lastRefreshStores = summary.stores;
  ctx.state.refreshRuns += 1;
  ctx.log.info("trust recompute finished", { trigger, stores: summary.stores, alerts: summary.alerts, durationMs: summary.durationMs });
  return summary;
}

/**
 * Stores whose published number (stores.trust_score / operational_status, what search, the directory and the
 * checkout gate read) is not what the engines in force give from their stored facts, which is what the public
 * trust score shows (the gateway re-runs the engines per request). That happens after a restart with another
 * engine configuration (TRUST_SCORE_PUBLIC_V41_ENABLED flipped, or a release that changed a formula): before,
 * the two disagreed until the next refresh, up to 6 h (audit A2 MED-6). Comparing the numbers rather than a
 * recorded flag set catches every cause and recomputes only the stores it changes. Pure work over the stored facts,
 * read a page at a time (10,000 stores: well under the boot's scoring bound).
 */
async function staleStores(ctx: Ctx, flags: TrustFlags): Promise<string[]> {
  type Row = { slug: string; computed_at: Date; facts: StoreFacts; trust_score: string | null; operational_status: OperationalStatus };
  const stale: string[] = [];
  let after = "";
  for (;;) {
    const rows = await ctx.sql<Row[]>`
      SELECT c.store_slug AS slug, c.computed_at, c.facts, s.trust_score, s.operational_status
      FROM trust_current c JOIN stores s ON s.slug = c.store_slug
      WHERE c.store_slug > ${after} ORDER BY c.store_slug LIMIT ${BATCH_SIZE}`;
    if (rows.length === 0) return stale;
    for (const r of rows) {
      let same = false;
      try {
        const s = scoreFromFacts(r.facts, r.computed_at.getTime(), flags);
        same = r.trust_score !== null && Math.abs(Number(r.trust_score) - s.selected.score0to1) < 1e-9 && r.operational_status === s.status;
      } catch {
        // Facts this release cannot read: recomputing them from the database is the way out.
      }
      if (!same) stale.push(r.slug);
    }
    after = rows[rows.length - 1]!.slug;
  }
}

/**
 * Scores every store without a trust_current row, and every store whose published number the engine configuration
 * in force would not publish (`staleStores`). Without the first, a fresh start would publish the seed's placeholder
 * (stores.trust_score) until the first reminder, while the first public read of a store's trust score computes
 * the real number on demand: an anonymous GET would then change what search shows and what checkout allows.
 */
async function scoreUnscoredStores(ctx: Ctx): Promise<RecomputeSummary | null> {
  const rows = await ctx.sql<{ slug: string }[]>`
    SELECT s.slug FROM stores s WHERE NOT EXISTS (SELECT 1 FROM trust_current c WHERE c.store_slug = s.slug) ORDER BY s.slug`;
  const stale = await staleStores(ctx, runtimeOf(ctx).flags());
  const slugs = [...rows.map((r) => r.slug), ...stale].sort();
  if (slugs.length === 0) return null;
  const summary = await recomputeSlugs(ctx, slugs, "boot");
  ctx.log.info("trust: stores without a computed score, or with one the engines in force would not publish, scored at boot", {
    stores: summary.stores,
    unscored: rows.length,
    stale: stale.length,
    durationMs: summary.durationMs,
  });
  return summary;
}

async function ensureReminders(ctx: Ctx): Promise<{ refreshAt: string }> {
  const rt = runtimeOf(ctx);
  const rows = await ctx.sql<{ name: string; due_at: Date }[]>`
    SELECT name, due_at FROM actor_reminders WHERE kind = ${ctx.kind} AND id = ${ctx.id}`;
  const due = new Map(rows.map((r) => [r.name, r.due_at]));
  let refresh = due.get("refreshAll");
  // Missing, or armed by a longer interval than the one in force (audit A4 L4: a restart with a shorter
  // TRUST_REFRESH_INTERVAL_MS waited for the old reminder first): armed at now + interval.
  if (!refresh || refresh.getTime() > ctx.now() + rt.intervalMs) {
    refresh = new Date(ctx.now() + rt.intervalMs);
    await ctx.schedule("refreshAll", refresh.getTime(), {});
  }
  if (!due.has("rotateKey")) await ctx.schedule("rotateKey", ctx.now() + KEY_ROTATION_INTERVAL_MS, {});
  return { refreshAt: refresh.toISOString() };
}

async function rotate(ctx: Ctx): Promise<{ activeKid: string; retiredKid: string }> {
  const rt = runtimeOf(ctx);
  const keys = await keySet(ctx, rt);
  const nowSec = Math.floor(ctx.now() / 1000);
  const before = keys.allKeys().map((k) => k.kid);
  const retiredKid = keys.activeKid;
  try {
    await keys.rotate(nowSec);
    const after = new Set(keys.allKeys().map((k) => k.kid));
    const tx = await ctx.tx();
    await retireDroppedKeys(
      tx,
      before.filter((kid) => !after.has(kid)),
      ctx.now(),
    );
    await saveTrustKeySet(tx, rt.kek, keys);
    await ctx.checkpoint();
  } catch (err) {
    ctx.memory.delete("keys"); // memory moved ahead of the database: reload on next use
    throw err;
  }
  ctx.log.info("trust signing key rotated", { activeKid: keys.activeKid, retiredKid });
  return { activeKid: keys.activeKid, retiredKid };
}

// ---------------------------------------------------------------------------------------------------------------
// Appeals and alerts

interface AppealRow {
  id: string;
  store_slug: string;
  status: "open" | "resolved";
  reason: string;
  evidence_urls: string[];
  disputed_score_0to1: string | null;
  filed_at: Date;
  review_due_at: Date;
  decision: "upheld" | "rejected" | null;
  decision_note: string | null;
  resolved_at: Date | null;
}

export function appealView(r: AppealRow): AppealView {
  return {
    id: r.id,
    storeSlug: r.store_slug,
    status: r.status,
    reason: r.reason,
    evidenceUrls: r.evidence_urls,
    disputedScore0to1: r.disputed_score_0to1 === null ? null : Number(r.disputed_score_0to1),
    filedAt: r.filed_at.toISOString(),
    reviewDueAt: r.review_due_at.toISOString(),
    decision: r.decision,
    decisionNote: r.decision_note,
    resolvedAt: r.resolved_at?.toISOString() ?? null,
  };
}

interface AlertRow {
  id: string;
  store_slug: string;
  kind: AlertView["kind"];
  detected_at: Date;
  engine: "v41" | "v2";
  from_0to1: string;
  to_0to1: string;
  delta_0to1: string;
  from_band: string;
  to_band: string;
  window_hours: number;
  status: "open" | "resolved";
  resolution: string | null;
  note: string | null;
  resolved_at: Date | null;
}

export function alertView(r: AlertRow): AlertView {
  return {
    id: r.id,
    storeSlug: r.store_slug,
    kind: r.kind,
    detectedAt: r.detected_at.toISOString(),
    engine: r.engine,
    from0to1: Number(r.from_0to1),
    to0to1: Number(r.to_0to1),
    delta0to1: Number(r.delta_0to1),
    fromBand: r.from_band,
    toBand: r.to_band,
    windowHours: r.window_hours,
    status: r.status,
    resolution: r.resolution,
    note: r.note,
    resolvedAt: r.resolved_at?.toISOString() ?? null,
  };
}

export const APPEAL_COLUMNS = "id, store_slug, status, reason, evidence_urls, disputed_score_0to1, filed_at, review_due_at, decision, decision_note, resolved_at";
export const ALERT_COLUMNS =
  "id, store_slug, kind, detected_at, engine, from_0to1, to_0to1, delta_0to1, from_band, to_band, window_hours, status, resolution, note, resolved_at";

// ---------------------------------------------------------------------------------------------------------------

/** Why an "UPDATE … WHERE status = 'open'" resolved nothing: the row is missing (404) or already resolved (409). */
async function whyNotResolvable(sql: Sql, table: "trust_appeals" | "trust_anomaly_alerts", id: string, noun: string): Promise<ActorError> {
  const [exists] = await sql.unsafe(`SELECT status FROM ${table} WHERE id = $1`, [id]);
  return exists ? fail("conflict", `The ${noun} is already resolved.`) : fail("not_found", `No such ${noun}.`);
}

export const trustActor = defineActor({
  kind: "trust",
  initialState: (): TrustState => ({ lastRefreshAt: null, lastRefreshStores: 0, refreshRuns: 0 }),
  async onActivate(ctx) {
    // Re-arm the refresh if it went missing (e.g. deleted by hand); skipped until the boot hook configured us.
    if (runtimes.has(ctx.sql)) await ensureReminders(ctx);
  },
  messages: {
    ensureScheduled: EnsureScheduled,
    recomputeAll: RecomputeAll,
    recompute: Recompute,
    rotateKey: RotateKey,
    scoreUnscored: ScoreUnscored,
    fileAppeal: FileAppeal,
    resolveAppeal: ResolveAppeal,
    resolveAlert: ResolveAlert,
  },
  handlers: {
    async ensureScheduled(ctx) {
      return ensureReminders(ctx);
    },

    async recomputeAll(ctx, m) {
      return recomputeAllStores(ctx, m.trigger);
    },

    async recompute(ctx, m) {
      const summary = await recomputeSlugs(ctx, [m.slug], m.trigger);
      if (summary.stores === 0) throw fail("store_not_found", `No store ${m.slug}.`);
      return summary;
    },

    async rotateKey(ctx) {
      return rotate(ctx);
    },

    async scoreUnscored(ctx) {
      return { scored: (await scoreUnscoredStores(ctx))?.stores ?? 0 };
    },

    async fileAppeal(ctx, m) {
      const [store] = await ctx.sql<{ owner_user_id: string | null }[]>`SELECT owner_user_id FROM stores WHERE slug = ${m.storeSlug}`;
      if (!store) throw fail("store_not_found", `No store ${m.storeSlug}.`);
      const [open] = await ctx.sql`SELECT id FROM trust_appeals WHERE store_slug = ${m.storeSlug} AND status = 'open'`;
      if (open) throw fail("conflict", "An appeal for this store is already under review.", { appealId: open.id });
      const [latest] = await ctx.sql<{ history_id: string; score_0to1: string }[]>`
        SELECT h.id AS history_id, h.score_0to1 FROM trust_score_history h
        WHERE h.store_slug = ${m.storeSlug} ORDER BY h.computed_at DESC, h.id DESC LIMIT 1`;
      const now = ctx.now();
      const tx = await ctx.tx();
      const [row] = await tx.unsafe<AppealRow[]>(
        `INSERT INTO trust_appeals (store_slug, filed_by, history_id, disputed_score_0to1, reason, evidence_urls, filed_at, review_due_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${APPEAL_COLUMNS}`,
        [
          m.storeSlug,
          m.userId,
          latest?.history_id ?? null,
          latest?.score_0to1 ?? null,
          m.reason,
          m.evidenceUrls as never,
          new Date(now),
          new Date(now + APPEAL_REVIEW_HOURS * HOUR_MS),
        ],
      );
      ctx.log.info("trust appeal filed", { appealId: row.id, store: m.storeSlug });
      return appealView(row);
    },

    async resolveAppeal(ctx, m) {
      const tx = await ctx.tx();
      const [row] = await tx.unsafe<AppealRow[]>(
        `UPDATE trust_appeals SET status = 'resolved', decision = $2, decision_note = $3, resolved_by = $4, resolved_at = $5
         WHERE id = $1 AND status = 'open' RETURNING ${APPEAL_COLUMNS}`,
        [m.id, m.decision, m.note, m.userId, new Date(ctx.now())],
      );
      if (!row) throw await whyNotResolvable(ctx.sql, "trust_appeals", m.id, "appeal");
      if (m.recompute) {
        await ctx.checkpoint();
        await recomputeSlugs(ctx, [row.store_slug], "operator");
      }
      return appealView(row);
    },

    async resolveAlert(ctx, m) {
      const tx = await ctx.tx();
      const [row] = await tx.unsafe<AlertRow[]>(
        `UPDATE trust_anomaly_alerts SET status = 'resolved', resolution = $2, note = $3, resolved_by = $4, resolved_at = $5
         WHERE id = $1 AND status = 'open' RETURNING ${ALERT_COLUMNS}`,
        [m.id, m.resolution, m.note, m.userId, new Date(ctx.now())],
      );
      if (!row) throw await whyNotResolvable(ctx.sql, "trust_anomaly_alerts", m.id, "alert");
      return alertView(row);
    },
  },
  reminders: {
    async refreshAll(ctx) {
      // Re-arm first, in the first batch's commit: a run that fails half-way still leaves the next one scheduled.
      await ctx.schedule("refreshAll", ctx.now() + runtimeOf(ctx).intervalMs, {});
      await recomputeAllStores(ctx, "refresh");
    },
    async rotateKey(ctx) {
      await ctx.schedule("rotateKey", ctx.now() + KEY_ROTATION_INTERVAL_MS, {});
      await rotate(ctx);
    },
  },
});

/**
 * Start-up of every process hosting actors: hand the actor its key-encryption key and live flags, make sure a
 * signing key exists, arm the refresh reminder if it is missing, and score the stores that have no computed score
 * yet, or one the engines in force would not publish, before the gateway listens (the others keep their number
 * until the reminder fires). A failure or a
 * hang of that scoring is logged and the boot goes on: those stores keep their seeded (or absent) score until the
 * refresh reminder or the first read computes it.
 */
export const trustBootHook: BootHook = {
  name: "trust",
  roles: ["start", "actors"],
  async run({ services, role }) {
    const kek = services.extras.get("secretKey");
    if (!(kek instanceof Uint8Array)) throw new Error("trust boot hook: secretKey missing from services");
    configureTrust(services.sql, {
      kek,
      flags: () => ({
        TRUST_SCORE_PUBLIC_V41_ENABLED: services.config.TRUST_SCORE_PUBLIC_V41_ENABLED,
        TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: services.config.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED,
      }),
      intervalMs: services.config.TRUST_REFRESH_INTERVAL_MS,
      // services.siteUrl, not config: without SITE_URL it becomes the listening address once the gateway listens.
      // Before that, with PORT=0 (tests), it names port 0: no issuer rather than a wrong one. An actor host
      // without SITE_URL (outside production) has no public origin at all: no issuer (review R4-1).
      issuer: () =>
        services.config.SITE_URL
          ? services.config.SITE_URL
          : role !== "actors" && (services.config.PORT !== 0 || !services.siteUrl.endsWith(":0"))
            ? services.siteUrl
            : undefined,
    });
    await ensureTrustKey(services.sql, kek, services.clock.now());
    await services.actors.ask(trustActor, TRUST_ACTOR_ID, "ensureScheduled", {});
    // One batch of 500 stores takes well under a second. A turn still running after the timeout goes on in the actor
    // and commits batch by batch; the boot does not wait for it.
    try {
      await services.actors.ask(trustActor, TRUST_ACTOR_ID, "scoreUnscored", {}, { timeoutMs: BOOT_SCORING_TIMEOUT_MS });
    } catch (err) {
      services.log.error("trust: scoring the stores without a computed score failed at boot; they keep their seeded score until the refresh reminder or their first read", {
        error: err as Error,
        timeoutMs: BOOT_SCORING_TIMEOUT_MS,
      });
    }
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Reads other areas use (committed rows; no actor turn needed)

export interface StoreTrust {
  slug: string;
  /** 0..1, null until first scored. */
  trustScore: number | null;
  operationalStatus: OperationalStatus;
  verificationLevel: string;
  /** trustScore >= 0.7 (agent threshold) and the store is not hidden or suspended. */
  agentCheckoutAllowed: boolean;
}

/** The published trust of one store (stores.trust_score / operational_status), or null for an unknown slug. */
export async function readStoreTrust(sql: Sql, slug: string): Promise<StoreTrust | null> {
  const [r] = await sql<{ slug: string; trust_score: string | null; operational_status: OperationalStatus; verification_level: string }[]>`
    SELECT slug, trust_score, operational_status, verification_level FROM stores WHERE slug = ${slug}`;
  if (!r) return null;
  const score = r.trust_score === null ? null : Number(r.trust_score);
  const visible = r.operational_status !== "hidden" && r.operational_status !== "suspended";
  return {
    slug: r.slug,
    trustScore: score,
    operationalStatus: r.operational_status,
    verificationLevel: r.verification_level,
    agentCheckoutAllowed: visible && score !== null && agentCheckoutAllowed(score),
  };
}

