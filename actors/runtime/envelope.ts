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
  /**
   * The HTTP request this message serves (its X-Request-Id), for the log lines of its turn and of the messages that
   * turn sends: absent for a reminder or background work. Caller-supplied text: only a REQUEST_ID token is kept.
   */
  requestId?: string;
}

/** What a request id may be (gateway/plugins/request-id.ts keeps a caller's own id only when it matches). */
export const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export function isRequestId(v: unknown): v is string {
  return typeof v === "string" && REQUEST_ID.test(v);
}

export type ReplyEnvelope = { ok: true; value: unknown } | { ok: false; error: ErrorData };

export const REMINDER_PREFIX = "$reminder:";
