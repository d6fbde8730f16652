/**
 * The orders table's `buyer_ref`: who bought, as a digest (raw e-mails and customer ids are never stored). One
 * formula for every writer and reader (audit B F0): a recorded human order's `buyer` (e-mail or the merchant's
 * customer id), an agent checkout that carried a verified customer (X-Customer-Identity), and the MCP customer
 * tools that look a customer's orders up must meet on the same value, or a customer never sees their own orders.
 */
import { createHash } from "node:crypto";

/** sha256 hex of `buyer:<slug>:<buyer trimmed and lower-cased>` (the hash stored rows already carry). */
export function buyerRefOf(slug: string, buyer: string): string {
  return createHash("sha256").update(`buyer:${slug}:${buyer.trim().toLowerCase()}`).digest("hex");
}
