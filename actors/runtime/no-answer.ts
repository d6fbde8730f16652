/**
 * Why a transport got no answer, kept for the log only. A 503 `actor_unavailable` says a fixed text
 * (unavailable-text.ts): the subject and the transport's own error are internals. ActorClient logs them once when it
 * gives up (review R6 LOW-3: after 666fce0 nothing said which actor, which subject, or whether nobody listened or
 * nobody answered in time). Carried as the error's `cause`, which `toData` never serialises, so it cannot reach a
 * reply or a client.
 */
import { ActorError } from "./errors.ts";

export type NoAnswerReason =
  /** Nobody subscribes to the partition's subject (an unowned partition during a rebalance, no host for the kind). */
  | "no_responders"
  /** A host took the request but did not answer before the attempt's time was up (a stuck or overloaded host). */
  | "timeout"
  /** Anything else the transport reported (a disconnect, a closed connection). */
  | "transport_error";

export interface NoAnswer {
  reason: NoAnswerReason;
  /** The transport's address for the actor (NATS: `actor.<kind>.<partition>`), when it has one. */
  subject?: string;
  /** The transport error's name and message, bounded. Never a message body. */
  error?: string;
}

/** An `actor_unavailable` with `text` for the caller and `why` for the log. */
export function noAnswerError(text: string, why: NoAnswer): ActorError {
  const err = new ActorError("actor_unavailable", text);
  err.cause = why;
  return err;
}

/** The reason attached by noAnswerError, if `err` carries one. */
export function noAnswerOf(err: unknown): NoAnswer | undefined {
  if (!(err instanceof ActorError)) return undefined;
  const c = err.cause as Partial<NoAnswer> | undefined;
  return c && typeof c === "object" && typeof c.reason === "string" ? (c as NoAnswer) : undefined;
}

/** `Name: message` of a thrown value, at most 200 characters. */
export function describeError(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
