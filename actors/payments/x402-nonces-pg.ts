/**
 * The durable EIP-3009 nonce store of the x402 checkout (table `x402_nonces`). `seen` is the read-only lookup the
 * local checks make before anything is written; `claim` is the atomic step that matters: INSERT ... ON CONFLICT
 * DO NOTHING, so of two concurrent requests carrying one payload exactly one wins, across processes. A claim is
 * bound to the payment intent that made it, so the same intent asking again (a retried or reconciled settle) is
 * not a replay. The chain stays the final guard: the token refuses a used nonce whatever we remember.
 */
import type { Sql } from "../../infra/db.ts";
import type { NonceStore } from "./x402-verify.ts";

export class PgNonceStore implements NonceStore {
  constructor(private readonly sql: Sql) {}

  async seen(key: string): Promise<boolean> {
    const rows = await this.sql<{ one: number }[]>`SELECT 1 AS one FROM x402_nonces WHERE nonce_key = ${key}`;
    return rows.length > 0;
  }

  /** NonceStore's unconditional form (claims with no intent); prefer `claim`. */
  async remember(key: string): Promise<void> {
    await this.sql`INSERT INTO x402_nonces (nonce_key) VALUES (${key}) ON CONFLICT DO NOTHING`;
  }

  /** Claims `key` for `intentId`. True when this intent holds the claim (newly, or already). */
  async claim(key: string, intentId: string): Promise<boolean> {
    const inserted = await this.sql<{ nonce_key: string }[]>`
      INSERT INTO x402_nonces (nonce_key, intent_id) VALUES (${key}, ${intentId})
      ON CONFLICT DO NOTHING RETURNING nonce_key`;
    if (inserted.length > 0) return true;
    const [row] = await this.sql<{ intent_id: string | null }[]>`SELECT intent_id FROM x402_nonces WHERE nonce_key = ${key}`;
    return row?.intent_id === intentId;
  }

  /** Gives a claim back when nothing can have moved under it (the facilitator was never reached). */
  async release(key: string, intentId: string): Promise<void> {
    await this.sql`DELETE FROM x402_nonces WHERE nonce_key = ${key} AND intent_id = ${intentId}`;
  }
}
