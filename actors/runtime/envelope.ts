/** What travels between a caller and an actor, on any transport. Plain JSON-compatible data only. */
import type { ErrorData } from "./errors.ts";

export interface RequestEnvelope {
  /** Unique per logical request; a retry reuses it so a write is applied once. */
  msgId: string;
  kind: string;
  id: string;
  type: string;
  body: unknown;
  /** Epoch milliseconds after which the caller no longer waits. */
  deadline: number;
  /** 1 for a first send; 2+ for a retry or any send that may repeat an earlier one (the actor then checks its inbox). */
  attempt: number;
}

export type ReplyEnvelope = { ok: true; value: unknown } | { ok: false; error: ErrorData };

export const REMINDER_PREFIX = "$reminder:";
