/**
 * An actor kind is a plain definition object (RivetKit style): its messages are TypeBox schemas keyed by type,
 * its handlers are functions of (ctx, body). The runtime guarantees turn-based execution (Orleans style): one
 * message at a time per activation, never interleaved at an `await`, and durable state committed before the
 * reply.
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { Logger } from "../../infra/log.ts";
import type { Sql } from "../../infra/db.ts";

export type MessageSchemas = Record<string, TSchema>;

export interface CallOptions {
  timeoutMs?: number;
  msgId?: string;
}

/** Calls another actor. Never call back into an actor that is waiting on you (that deadlocks until timeout). */
export interface ActorCaller {
  ask<D extends AnyActorDefinition, T extends MessageType<D>>(
    def: D,
    id: string,
    type: T,
    body: MessageBody<D, T>,
    opts?: CallOptions,
  ): Promise<ReplyOf<D, T>>;
  /**
   * `ask`, answered without a promise when it can be: a read-only message to a loaded activation hosted by this
   * process (the in-process bus) whose handler did not await. The reply comes back as a value, a refusal is thrown
   * at once; anything else (another process, an activation still loading, a queued turn) returns `ask`'s promise.
   * Optional: a caller without it (a test double) is used through `ask`.
   */
  askNow?<D extends AnyActorDefinition, T extends MessageType<D>>(
    def: D,
    id: string,
    type: T,
    body: MessageBody<D, T>,
    opts?: CallOptions,
  ): ReplyOf<D, T> | Promise<ReplyOf<D, T>>;
}

export interface ActorContext<S> extends ActorCaller {
  readonly kind: string;
  readonly id: string;
  /** The activation's state. Mutate it or replace it; the runtime persists it at the end of the turn if it changed. */
  state: S;
  /**
   * Per-activation memory that is never persisted (rate-limit buckets): lost on passivation or failover,
   * which is the documented exception to durability.
   */
  readonly memory: Map<string, unknown>;
  /** Pool for reads that need not be part of the turn's transaction. */
  readonly sql: Sql;
  readonly log: Logger;
  readonly msgId: string;
  now(): number;
  /**
   * The turn's transaction, opened on first use. Everything written through it commits atomically with the
   * state row (fenced by version) before the reply is sent, or not at all.
   */
  tx(): Promise<Sql>;
  /**
   * Commits what the turn has written so far (e.g. a payment intent before calling the processor).
   *
   * Over NATS the first mid-turn checkpoint of a turn whose caller waits also leaves a *pending marker* for its
   * message (in the same statement, migration 0009): until the turn's reply replaces it (or the turn fails and
   * deletes it, at the latest once the database answers again), a resend of the message that reaches another
   * activation answers the retryable `actor_unavailable` instead of running the handler on this half-finished state,
   * and no other activation loads the actor. A checkpoint with nothing to commit (state unchanged, no transaction
   * open, no reminder changed) writes nothing, so it leaves no marker either: change the state first (e.g. a status
   * saying the outside call is under way) to have the turn protected. The marker
   * names this host: it holds nothing back once the host leaves the membership (killed, or cut off from NATS), nor
   * after the caller's deadline + 120 s. Then another activation loads the checkpointed state and `onActivate` must
   * treat the turn as dead (the cart reconciles, a write); a turn that was in fact still running then has its final
   * write refused by the version fence. So a handler resumes from what its checkpoint wrote, never from what it did
   * after it.
   */
  checkpoint(): Promise<void>;
  /** Durable reminder: fires `reminders[name]` at `at` (epoch ms), even after a restart. Same name replaces. */
  schedule(name: string, at: number, payload?: unknown): Promise<void>;
  cancelReminder(name: string): Promise<void>;
  /** Fire-and-forget event to subscribers (search indexer, metrics). Sent after the turn commits. */
  publish(topic: string, event: unknown): void;
}

/**
 * A handler may return its reply directly: a read-only (reentrant) handler that does not await is then answered
 * without a promise hop (the in-process bus hands the reply back at once).
 */
export type Handler<S, B, R> = (ctx: ActorContext<S>, body: B) => R | Promise<R>;

export interface ActorDefinition<S, M extends MessageSchemas, H extends { [K in keyof M]: Handler<S, Static<M[K]>, unknown> }> {
  kind: string;
  initialState: (id: string) => S;
  /** `durable` (default) keeps state in Postgres; `memory` never touches the database (rate-limit buckets). */
  persistence?: "durable" | "memory";
  messages: M;
  handlers: H;
  /**
   * Read-only handlers: they never change durable state (a write through ctx.tx() is refused), so they run at once
   * without waiting behind the mailbox and without snapshotting or persisting state. They may change `ctx.memory`
   * only synchronously (no await between reading and writing it), which keeps such changes atomic.
   */
  reentrant?: readonly (keyof M & string)[];
  /**
   * Messages passed by reference on the in-process bus (Orleans' `[Immutable]`, Akka's local messages): neither
   * the body nor the reply is copied. Only for messages whose caller never touches the body after sending, whose
   * handler keeps no object of the body (strings and numbers are fine) and whose reply is built for the call or
   * made of frozen parts (it may be read by the caller while the actor runs on). Over NATS they are serialised like
   * any other. Under `bun test` (NODE_ENV=test) the bus still checks each one as it passes: body and reply must
   * come out of a JSON round trip unchanged (so nothing works in-process that would not over NATS), and both are
   * deep-frozen so a mutation by either side throws (docs/decisions.md).
   */
  immutable?: readonly (keyof M & string)[];
  /**
   * Messages that create the actor under an id the caller has just generated (a random uuid): an activation
   * started by the first send of one of them skips reading actor_state. It stays safe if the id exists after all:
   * the turn's state write is an insert that must not find a row (the fence), and a turn that writes nothing is
   * checked by a read before it replies; either way the caller's retry (a resend, which always reads) gets the
   * real state. The handler may therefore run once against the initial state for nothing: list only messages
   * whose handlers have no effects outside the turn's own writes — no `ctx.publish` either: a turn that writes
   * nothing publishes its events before the existence check can refuse its reply.
   */
  createdBy?: readonly (keyof M & string)[];
  reminders?: Record<string, (ctx: ActorContext<S>, payload: unknown) => Promise<void>>;
  /**
   * The state's expiry for a retention rule of this kind (whole ms since the epoch), or undefined when the rule may
   * not delete the actor as it is now. Kept in `actor_state.expiry_ms` (migration 0096), a column a partial index can
   * read without naming `state`: written only when it would otherwise be unset, above this, or more than an hour behind
   * it (state-write.ts EXPIRY_SLACK_MS), and left as it is when this is undefined, so a turn's update stays HOT.
   */
  expiryOf?: (state: S) => number | undefined;
  /** Called once when an activation loads its state (e.g. to re-arm something or migrate old state). */
  onActivate?: (ctx: ActorContext<S>) => Promise<void>;
}

// biome-ignore lint: the widest actor definition, used only as a constraint
export type AnyActorDefinition = ActorDefinition<any, any, any>;
export type MessageType<D extends AnyActorDefinition> = keyof D["messages"] & string;
export type MessageBody<D extends AnyActorDefinition, T extends MessageType<D>> = Static<D["messages"][T]>;
export type ReplyOf<D extends AnyActorDefinition, T extends MessageType<D>> = Awaited<ReturnType<D["handlers"][T]>>;

export function defineActor<S, M extends MessageSchemas, H extends { [K in keyof M]: Handler<S, Static<M[K]>, unknown> }>(
  def: ActorDefinition<S, M, H>,
): ActorDefinition<S, M, H> {
  if (!/^[a-z][a-z0-9-]*$/.test(def.kind)) throw new Error(`actor kind "${def.kind}" must be lowercase letters, digits, dashes`);
  for (const type of Object.keys(def.messages)) {
    if (!(type in def.handlers)) throw new Error(`actor ${def.kind}: message ${type} has no handler`);
  }
  return def;
}
