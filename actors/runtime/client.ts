/**
 * The caller's side: `ask(def, id, type, body)` sends one typed message and returns the handler's reply, or
 * throws the handler's ActorError. A request that finds no responder or times out (a host move, a failover) is
 * retried with the SAME message id until the deadline, so the actor applies a write once.
 */
import type { Transport } from "../transport/transport.ts";
import type { ActorCaller, AnyActorDefinition, CallOptions, MessageBody, MessageType, ReplyOf } from "./define-actor.ts";
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

  async ask<D extends AnyActorDefinition, T extends MessageType<D>>(
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
    let attempt = opts.msgId ? 1 : 0;
    let backoff = 20;
    for (;;) {
      attempt++;
      const remaining = deadline - Date.now();
      try {
        const reply = await this.transport.request(
          { msgId, kind: def.kind, id, type, body, deadline, attempt },
          Math.max(1, this.transport.lossless ? remaining : Math.min(this.attemptTimeoutMs, remaining)),
        );
        if (reply.ok) return reply.value as ReplyOf<D, T>;
        const err = ActorError.fromData(reply.error);
        if (err.code !== "actor_unavailable") throw err;
        if (deadline - Date.now() <= backoff) throw err;
      } catch (err) {
        const retryable = err instanceof ActorError && err.code === "actor_unavailable";
        if (!retryable || deadline - Date.now() <= backoff) throw err;
      }
      await Bun.sleep(backoff);
      backoff = Math.min(backoff * 2, 500);
    }
  }
}
