/**
 * The caller's side: `ask(def, id, type, body)` sends one typed message and returns the handler's reply, or
 * throws the handler's ActorError. A request that finds no responder or times out (a host move, a failover) is
 * retried with the SAME message id until the deadline, so the actor applies a write once.
 */
import type { Transport } from "../transport/transport.ts";
import type { ActorCaller, AnyActorDefinition, CallOptions, MessageBody, MessageType, ReplyOf } from "./define-actor.ts";
import type { ReplyEnvelope, RequestEnvelope } from "./envelope.ts";
import { ActorError } from "./errors.ts";

export interface ClientOptions {
  defaultTimeoutMs?: number;
  /** Per-attempt timeout; the overall deadline is `timeoutMs`. */
  attemptTimeoutMs?: number;
}

export class ActorClient implements ActorCaller {
  private readonly defaultTimeoutMs: number;
  private readonly attemptTimeoutMs: number;

  constructor(
    private readonly transport: Transport,
    opts: ClientOptions = {},
  ) {
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? 10_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 3_000;
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
    const msgId = opts.msgId ?? crypto.randomUUID();
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    // A caller-supplied msgId may repeat an earlier send (e.g. after the caller itself restarted): mark every
    // send as a possible resend so the actor checks its durable inbox, not only its memory.
    const env: RequestEnvelope = { msgId, kind: def.kind, id, type, body, deadline, attempt: opts.msgId ? 2 : 1 };
    return this.send(env).then(
      (reply) => (reply.ok ? reply.value : this.retry(env, ActorError.fromData(reply.error))),
      (err: unknown) => this.retry(env, err),
    ) as Promise<ReplyOf<D, T>>;
  }

  private send(env: RequestEnvelope): Promise<ReplyEnvelope> {
    const remaining = env.deadline - Date.now();
    try {
      return this.transport.request(env, Math.max(1, this.transport.lossless ? remaining : Math.min(this.attemptTimeoutMs, remaining)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** After a failed send: retries an `actor_unavailable` (same msgId, next attempt) with backoff until the deadline. */
  private async retry(env: RequestEnvelope, err: unknown): Promise<unknown> {
    let backoff = 20;
    for (;;) {
      const retryable = err instanceof ActorError && err.code === "actor_unavailable";
      if (!retryable || env.deadline - Date.now() <= backoff) throw err;
      await Bun.sleep(backoff);
      backoff = Math.min(backoff * 2, 500);
      env = { ...env, attempt: env.attempt + 1 };
      try {
        const reply = await this.send(env);
        if (reply.ok) return reply.value;
        err = ActorError.fromData(reply.error);
      } catch (e) {
        err = e;
      }
    }
  }
}
