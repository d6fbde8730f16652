/**
 * The wire between callers (gateways) and actor hosts. Two implementations pass one contract suite
 * (test/actors/transport-contract.ts): in-process (embedded default) and NATS (distributed).
 */
import type { ReplyEnvelope, RequestEnvelope } from "../runtime/envelope.ts";

/** May answer synchronously (a read-only turn that did not await): the transport then skips waiting for it. */
export type ServeHandler = (env: RequestEnvelope) => ReplyEnvelope | Promise<ReplyEnvelope>;
export type EventHandler = (event: unknown) => void | Promise<void>;

export interface Transport {
  readonly name: string;
  /**
   * True when a request cannot be lost in transit (in-process): a slow reply then only means a busy mailbox,
   * so callers wait for their whole deadline instead of retrying per attempt.
   */
  readonly lossless?: boolean;
  /**
   * The hosts this process's placement sees alive (NATS: the actor_hosts membership bucket that also decides which
   * host owns a partition). A turn's pending marker names its host, and counts only while that host is a member
   * (ActorHost). Absent where there is one host (in-process).
   */
  readonly hosts?: HostMembership;
  /**
   * Delivers `env` to whichever host serves `env.kind`/`env.id` and resolves with its reply.
   * Rejects with ActorError("actor_unavailable") when nobody answers before `timeoutMs`
   * (the caller may retry with the same msgId).
   */
  request(env: RequestEnvelope, timeoutMs: number, immutable?: boolean): Promise<ReplyEnvelope>;
  /**
   * `request` that hands back a reply ready at once as a value (in-process only; `ActorClient.askNow`).
   * `immutable`: the message is one of its definition's `immutable` messages, passed by reference where the
   * transport can (define-actor.ts).
   */
  requestNow?(env: RequestEnvelope, timeoutMs: number, immutable: boolean): ReplyEnvelope | Promise<ReplyEnvelope>;
  /** Host side: handle every message for `kind` placed on this host. */
  serve(kind: string, handler: ServeHandler): Promise<void>;
  /** Best-effort event fan-out (durable consumers are the NATS transport's business). */
  publish(topic: string, event: unknown): Promise<void>;
  subscribe(topic: string, handler: EventHandler): () => void;
  close(): Promise<void>;
}

/** This host's id in the membership, and whether another host is in it (see `Transport.hosts`). */
export interface HostMembership {
  readonly self: string;
  /**
   * False once the host left (a clean close) or its heartbeat stopped: its TTL passed and a grace period after it
   * (NATS: MemberView.isGone, 2 s with the default 1 s heartbeat), so a live host whose beat lands late after a
   * JetStream stall is not taken for dead. True while unknown.
   */
  isLive(hostId: string): boolean;
}
