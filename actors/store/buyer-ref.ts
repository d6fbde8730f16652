/**
 * The orders table's `buyer_ref`: who bought, as a digest (raw e-mails and customer ids are never stored). One
 * formula for every writer and reader (audit B F0): a recorded human order's `buyer` (e-mail or the merchant's
 * customer id), an agent checkout that carried a verified customer (X-Customer-Identity), and the MCP customer
 * tools that look a customer's orders up must meet on the same value, or a customer never sees their own orders.
 */
import { createHash } from "node:crypto";

/**
 * A buyer as one customer: trimmed and lower-cased. Recorded orders have been hashed this way since the first
 * ingest (actors/store/ingest.ts `orderFromInput`), so their stored digests only match a folded id: ids that
 * differ only in letter case are one customer (review R3-9, docs/decisions.md). Used wherever a customer is keyed
 * (the digest, the MCP customer rate bucket), so they all agree on who is the same customer.
 */
export function buyerKey(buyer: string): string {
  return buyer.trim().toLowerCase();
}

/** sha256 hex of `buyer:<slug>:<buyerKey(buyer)>` (the hash stored rows already carry). */
export function buyerRefOf(slug: string, buyer: string): string {
  return createHash("sha256").update(`buyer:${slug}:${buyerKey(buyer)}`).digest("hex");
}
