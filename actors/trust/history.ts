/**
 * Reads of the published score history (`trust_score_history`, written by the trust actor's recompute turns):
 * the explanation's trend window and the merchant dashboard's chart. Committed rows only; no actor turn.
 */
import type { Sql } from "../../infra/db.ts";
import type { HistoryPoint } from "./explain.ts";

/** Scores computed at or after `since`, oldest first. */
export async function readTrustHistory(sql: Sql, slug: string, since: Date): Promise<HistoryPoint[]> {
  const rows = await sql<{ computed_at: Date; score_0to1: string; engine: "v41" | "v2"; verified_evidence: number }[]>`
    SELECT computed_at, score_0to1, engine, verified_evidence FROM trust_score_history
    WHERE store_slug = ${slug} AND computed_at >= ${since}
    ORDER BY computed_at`;
  return rows.map((h) => ({ at: h.computed_at.getTime(), score0to1: Number(h.score_0to1), engine: h.engine, verifiedEvidence: h.verified_evidence }));
}
