/**
 * The rail registry: which `PaymentRail` serves a rail name in this process. Rails are process-wide singletons
 * over the shared database (the sandbox ledger is in Postgres), so a gateway process (buyer approval link) and an
 * actor host (charges) see the same processor. The x402 rail registers itself here when it lands.
 */
import type { Sql } from "../../infra/db.ts";
import { CardSandboxRail } from "./card-sandbox.ts";
import type { PaymentRail } from "./rail.ts";
import { PgSandboxLedger } from "./sandbox-ledger-pg.ts";

export type RailName = "card" | "x402";

/**
 * The sandbox processor's buyer-approval page, relative to the site URL (served by gateway/rest/checkout.ts). A link
 * is `{path}/{intentId}/{approvalToken}`: the token is the buyer's secret (card-sandbox.ts).
 */
export const SANDBOX_APPROVAL_PATH = "/api/v1/sandbox/payments";

const bySql = new WeakMap<Sql, Map<string, PaymentRail>>();

function railsFor(sql: Sql): Map<string, PaymentRail> {
  let m = bySql.get(sql);
  if (!m) bySql.set(sql, (m = new Map()));
  return m;
}

/** The built-in card rail (sandbox processor over Postgres). One per database pool. */
export function cardRail(sql: Sql): CardSandboxRail {
  const rails = railsFor(sql);
  let rail = rails.get("card") as CardSandboxRail | undefined;
  if (!rail) {
    rail = new CardSandboxRail({
      ledger: new PgSandboxLedger(sql),
      // MOCK completes at once on stores whose payment_methods list MOCK; the caller checks that list first.
      mockStores: ["demo-store"],
      // Relative: actors do not know the public origin; the gateway prefixes it (absoluteApprovalUrl).
      approvalBaseUrl: SANDBOX_APPROVAL_PATH,
    });
    rails.set("card", rail);
  }
  return rail;
}

/** Lets another rail (x402) plug in without this module knowing it. */
export function registerRail(sql: Sql, name: RailName, rail: PaymentRail): void {
  railsFor(sql).set(name, rail);
}

export function railFor(sql: Sql, name: RailName): PaymentRail | undefined {
  if (name === "card") return cardRail(sql);
  return railsFor(sql).get(name);
}

/** A buyer link as the agent gets it: the rail's relative link made absolute with the public origin. */
export function absoluteApprovalUrl(siteUrl: string, url: string): string {
  return url.startsWith("/") ? `${siteUrl.replace(/\/$/, "")}${url}` : url;
}
