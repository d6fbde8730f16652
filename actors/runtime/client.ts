/**
 * The caller's side: `ask(def, id, type, body)` sends one typed message and returns the handler's reply, or
 * throws the handler's ActorError. A request that finds no responder or times out (a host move, a failover) is
 * retried with the SAME message id until the deadline, so the actor applies a write once.
 */
import type { Transport } from "../transport/transport.ts";
import type { ActorCaller, AnyActorDefinition, CallOptions, MessageBody, MessageType, ReplyOf } from "./define-actor.ts";
import type { ReplyEnvelope, RequestEnvelope } from "./envelope.ts";
import { ActorError } from "./errors.ts";
import { noAnswerOf } from "./no-answer.ts";
import { currentRequestId, log as rootLog, type Logger } from "../../infra/log.ts";

export interface ClientOptions {
  defaultTimeoutMs?: number;
  /** Per-attempt timeout; the overall deadline is `timeoutMs`. */
  attemptTimeoutMs?: number;
  /** Where a request given up on is logged (default: the root logger, component actor-client). */
  log?: Logger;
}

export class ActorClient implements ActorCaller {
  private readonly defaultTimeoutMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly log: Logger;

  constructor(
    /** Read by the health report (actor hosts seen on the transport); never used to send around the client. */
    readonly transport: Transport,
    opts: ClientOptions = {},
  ) {
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? 10_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 3_000;
    this.log = opts.log ?? rootLog.child({ component: "actor-client" });
  }

  /**
   * The first send is a plain promise chain (no async frame): nearly every message is answered on it. Only a
   * retryable failure enters the retry loop.
   */
  ask<D extends AnyActorDefinition, T extends MessageType<D>>(
    def: D,
    id: string,
    type: T,
    body: MessageBody<D, T>,
    opts: CallOptions = {},
  ): Promise<ReplyOf<D, T>> {
    const env = this.envelope(def, id, type, body, opts);
    const immutable = isImmutable(def, type);
    return this.answer(env, this.send(env, immutable), immutable) as Promise<ReplyOf<D, T>>;
  }

  /** See ActorCaller.askNow: a reply ready at once is returned as a value, a refusal ready at once is thrown. */
  askNow<D extends AnyActorDefinition, T extends MessageType<D>>(
    def: D,
    id: string,
    type: T,
    body: MessageBody<D, T>,
    opts: CallOptions = {},
  ): ReplyOf<D, T> | Promise<ReplyOf<D, T>> {
    if (!this.transport.requestNow) return this.ask(def, id, type, body, opts);
    const env = this.envelope(def, id, type, body, opts);
    const immutable = isImmutable(def, type);
    const out = this.transport.requestNow(env, Math.max(1, env.deadline - Date.now()), immutable);
    if (out instanceof Promise) return this.answer(env, out, immutable) as Promise<ReplyOf<D, T>>;
    if (out.ok) return out.value as ReplyOf<D, T>;
    const err = ActorError.fromData(out.error);
    if (err.code === "actor_unavailable") return this.retry(env, err, immutable) as Promise<ReplyOf<D, T>>;
    throw err;
  }

  /** The reply's value, or the retry loop for a failed first send. */
  private answer(env: RequestEnvelope, sent: Promise<ReplyEnvelope>, immutable: boolean): Promise<unknown> {
    return sent.then(
      (reply) => (reply.ok ? reply.value : this.retry(env, ActorError.fromData(reply.error), immutable)),
      (err: unknown) => this.retry(env, err, immutable),
    );
  }

  private envelope(def: AnyActorDefinition, id: string, type: string, body: unknown, opts: CallOptions): RequestEnvelope {
    const msgId = opts.msgId ?? crypto.randomUUID();
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    // A caller-supplied msgId may repeat an earlier send (e.g. after the caller itself restarted): mark every
    // send as a possible resend so the actor checks its durable inbox, not only its memory.
    // The request being served (the gateway's edge hook, or the turn sending this) travels with the message, so the
    // actor's log lines name it on any transport.
    return { msgId, kind: def.kind, id, type, body, deadline: Date.now() + timeoutMs, attempt: opts.msgId ? 2 : 1, requestId: currentRequestId() };
  }

  private send(env: RequestEnvelope, immutable: boolean): Promise<ReplyEnvelope> {
    const remaining = env.deadline - Date.now();
    try {
      return this.transport.request(env, Math.max(1, this.transport.lossless ? remaining : Math.min(this.attemptTimeoutMs, remaining)), immutable);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** After a failed send: retries an `actor_unavailable` (same msgId, next attempt) with backoff until the deadline. */
  private async retry(env: RequestEnvelope, err: unknown, immutable: boolean): Promise<unknown> {
    let backoff = 20;
    let attempts = 1;
    for (;;) {
      if (!(err instanceof ActorError) || err.code !== "actor_unavailable") throw err;
      if (env.deadline - Date.now() <= backoff) {
        this.giveUp(env, err, attempts);
        throw err;
      }
      await Bun.sleep(backoff);
      backoff = Math.min(backoff * 2, 500);
      env = { ...env, attempt: env.attempt + 1 };
      attempts++;
      try {
        const reply = await this.send(env, immutable);
        if (reply.ok) return reply.value;
        err = ActorError.fromData(reply.error);
      } catch (e) {
        err = e;
      }
    }
  }

  /**
   * The one line a request that ends in a 503 `actor_unavailable` leaves: the caller's body says a fixed text
   * (unavailable-text.ts), so this is where an operator learns which actor and message, how often it was tried, and
   * why the last try failed: nobody listened (`no_responders`: an unowned partition, no host for the kind), nobody
   * answered in time (`timeout`: a stuck or overloaded host), the transport failed, or a host answered that it could
   * not run it (`host_unavailable`, with its fixed text). Never the message body: it can carry anything.
   */
  private giveUp(env: RequestEnvelope, err: ActorError, attempts: number): void {
    const why = noAnswerOf(err);
    this.log.warn("actor request gave up: no answer before its deadline", {
      kind: env.kind,
      id: env.id,
      type: env.type,
      msgId: env.msgId,
      attempts,
      reason: why?.reason ?? "host_unavailable",
      ...(why?.subject ? { subject: why.subject } : {}),
      lastError: why ? (why.error ?? why.reason) : err.message,
    });
  }
}

function isImmutable(def: AnyActorDefinition, type: string): boolean {
  const list: readonly string[] | undefined = def.immutable;
  return list !== undefined && list.includes(type);
}
