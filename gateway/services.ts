/**
 * What a gateway route may use. Routes translate HTTP into actor messages through `actors`; they hold no
 * business rules. `sql` is here for the health probe and for read-only lookups that are not actor state.
 */
import type { ActorCaller } from "../actors/runtime/define-actor.ts";
import type { Clock } from "../actors/runtime/clock.ts";
import type { Config } from "../infra/config.ts";
import type { Sql } from "../infra/db.ts";
import type { Logger } from "../infra/log.ts";

export interface Services {
  config: Config;
  actors: ActorCaller;
  sql: Sql;
  clock: Clock;
  log: Logger;
  /** Public origin for links ({site_url}). */
  siteUrl: string;
  /** Readiness of subsystems, reported by /health. Each returns true when ready. */
  readiness: Record<string, () => boolean | Promise<boolean>>;
  /** Extension point: feature modules register their long-lived helpers here (search service, signers…). */
  extras: Map<string, unknown>;
}
