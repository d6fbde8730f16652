/**
 * The sandbox card processor's buyer-approval link in tests. The link is `/api/v1/sandbox/payments/{intent}/{token}`
 * and the token is a secret only the buyer's agent is given (audit I-1): tests decide at the link an agent answer
 * carried (`approvalLink` for REST/MCP, `continueUrl` for ACP/UCP, AP2's `approval_urls`), so an answer handing out
 * a wrong link fails them (review RA-5). Only where the test holds nothing but the intent id (an order row) do they
 * decide at the link the processor handed out for that intent (`approvalLinkOf`, read from its ledger).
 */
import { expect } from "bun:test";
import type { TestServer } from "./server.ts";

type Res = { status: number; body: any };

/** The path of an approval link (an agent gets it absolute). */
export const linkPath = (link: string): string => (link.startsWith("/") ? link : new URL(link).pathname);

/** The link for `store` in a 202 user_action_required answer (REST `details.approval_urls`), as a path. */
export function approvalLink(answer: Res, store: string): string {
  const urls: { merchant_slug: string; url: string }[] = answer.body?.details?.approval_urls ?? answer.body?.approval_urls ?? [];
  const u = urls.find((a) => a.merchant_slug === store);
  expect(u).toBeDefined();
  return linkPath(u!.url);
}

/** The link the processor handed out for a waiting intent (its ledger's token), as a path. */
export async function approvalLinkOf(srv: TestServer, intentId: string): Promise<string> {
  const [row] = await srv.db.sql<{ approval_token: string | null }[]>`SELECT approval_token FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`;
  expect(row?.approval_token ?? null).not.toBeNull();
  return `/api/v1/sandbox/payments/${intentId}/${row!.approval_token}`;
}

/** The buyer's decision at a link (JSON post): the processor's answer. */
export const decideAt = (srv: TestServer, link: string, decision: "approve" | "reject"): Promise<Res> =>
  srv.json(`${linkPath(link)}/${decision}`, { method: "POST", body: {} });

/** The buyer's decision on a waiting intent, at the link the processor handed out for it. */
export async function decideIntent(srv: TestServer, intentId: string, decision: "approve" | "reject"): Promise<Res> {
  return decideAt(srv, await approvalLinkOf(srv, intentId), decision);
}

/**
 * The approval link a UCP (`continue_url`) or ACP session answer carries. ACP 2025-09-29 has no member for it (its
 * Link types are terms_of_use, privacy_policy, seller_shop_policies): it is the autolink `<url>` of an info message
 * (gateway/bridge/acp.ts `acpApprovalMessage`).
 */
export function continueUrl(answer: Res): string | undefined {
  if (typeof answer.body?.continue_url === "string") return answer.body.continue_url;
  const messages: { type: string; content?: string }[] | undefined = answer.body?.messages;
  if (!Array.isArray(messages)) return undefined;
  for (const m of messages) {
    const url = m.type === "info" && typeof m.content === "string" ? /<(https?:\/\/[^>\s]+\/api\/v1\/sandbox\/payments\/[^>\s]+)>/.exec(m.content)?.[1] : undefined;
    if (url) return url;
  }
  return undefined;
}

/** The store whose payment an approval link decides (its intent's order), to choose the decision a test wants there. */
export async function storeOfLink(srv: TestServer, link: string): Promise<string> {
  const intentId = linkPath(link).split("/")[5];
  const [row] = await srv.db.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE intent_id = ${intentId ?? ""}`;
  expect(row).toBeDefined();
  return row!.store_slug;
}

/**
 * The buyer decides every waiting store of an ACP/UCP session at the links the protocol hands out: the complete's
 * answer, then a read for the next store's (a session answer has room for one link). `decision` says what the buyer
 * does for a store; `count` is how many stores wait. Returns the stores in the order they were decided.
 */
export async function decideAtProtocolLinks(
  srv: TestServer,
  first: Res,
  read: () => Promise<Res>,
  decision: (store: string) => "approve" | "reject",
  count: number,
): Promise<string[]> {
  const decided: string[] = [];
  for (let answer = first; decided.length < count; answer = await read()) {
    const link = continueUrl(answer);
    expect(link).toBeDefined();
    const store = await storeOfLink(srv, link!);
    expect(decided).not.toContain(store);
    const r = await decideAt(srv, link!, decision(store));
    expect(r.status).toBe(200);
    decided.push(store);
  }
  // every store decided: no link is left to hand out
  expect(continueUrl(await read())).toBeUndefined();
  return decided;
}
