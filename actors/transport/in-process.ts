/**
 * The embedded default's bus. Envelopes are copied both ways with JSON's semantics, exactly what the NATS
 * transport does on the wire: an actor never shares a mutable object with its caller, and a value that would not
 * survive NATS (a Date, undefined, a Map) does not survive here either, so code that works here behaves the same
 * over NATS. The copy walks the value instead of printing and parsing JSON text (json-copy.ts): ~3x cheaper for
 * these small envelopes, and JSON was ~10x cheaper than structuredClone under Bun (docs/performance.md).
 */
import { jsonCopy as copy, jsonCopyMember } from "./json-copy.ts";
import { checkedShare } from "./immutable.ts";
import { ActorError } from "../runtime/errors.ts";
import { NO_ANSWER_TEXT, UNAVAILABLE_TEXT } from "../runtime/unavailable-text.ts";
import { noAnswerError } from "../runtime/no-answer.ts";
import type { ReplyEnvelope, RequestEnvelope } from "../runtime/envelope.ts";
import type { EventHandler, ServeHandler, Transport } from "./transport.ts";

/** How often deadlines of requests in flight are checked (the precision of a timeout). */
const SWEEP_MS = 10;

interface Waiting {
  due: number;
  env: RequestEnvelope;
  timeoutMs: number;
  reject: (err: ActorError) => void;
}

/** A finite number as JSON writes it (-0 as 0); anything else is left to the whole-envelope copy. */
const plainNumber = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);

/**
 * `copy(env)` for a well-formed request envelope: its scalar fields need no walk (strings and finite numbers come
 * out of JSON as they went in, bar -0), only the body does. Any other envelope takes the whole JSON copy.
 */
export function copyEnvelope(env: RequestEnvelope): RequestEnvelope {
  const { msgId, kind, id, type, deadline, attempt, requestId } = env;
  if (
    typeof msgId !== "string" ||
    (requestId !== undefined && typeof requestId !== "string") ||
    typeof kind !== "string" ||
    typeof id !== "string" ||
    typeof type !== "string" ||
    !plainNumber(deadline) ||
    !plainNumber(attempt) ||
    typeof (env as { toJSON?: unknown }).toJSON === "function"
  ) {
    return copy(env);
  }
  return { msgId, kind, id, type, body: jsonCopyMember(env.body, "body"), deadline: deadline === 0 ? 0 : deadline, attempt: attempt === 0 ? 0 : attempt, requestId };
}

/** An immutable message's envelope: its body handed over as it is (checked under test, see immutable.ts). */
function shareEnvelope(env: RequestEnvelope): RequestEnvelope {
  checkedShare(env.body);
  return env;
}

export class InProcessTransport implements Transport {
  readonly name = "in-process";
  readonly lossless = true;
  private readonly servers = new Map<string, ServeHandler>();
  private readonly topics = new Map<string, Set<EventHandler>>();
  private closed = false;
  private readonly waiting = new Set<Waiting>();
  private sweeper: ReturnType<typeof setInterval> | undefined;

  request(env: RequestEnvelope, timeoutMs: number, immutable = false): Promise<ReplyEnvelope> {
    const out = this.requestNow(env, timeoutMs, immutable);
    return out instanceof Promise ? out : Promise.resolve(out);
  }

  /**
   * A reply that is ready at once (a read-only turn that did not await) comes back as a value, with no deadline to
   * watch; anything else as a promise. Never throws: a failure is a rejected promise, as from `request`.
   * An immutable message (define-actor.ts) crosses by reference, the rest as JSON-semantics copies.
   */
  requestNow(env: RequestEnvelope, timeoutMs: number, immutable: boolean): ReplyEnvelope | Promise<ReplyEnvelope> {
    const handler = this.servers.get(env.kind);
    if (!handler || this.closed) {
      return Promise.reject(noAnswerError(UNAVAILABLE_TEXT, this.closed ? { reason: "transport_error", error: "transport closed" } : { reason: "no_responders" }));
    }
    const pass = immutable ? checkedShare : copy;
    let out: ReplyEnvelope | Promise<ReplyEnvelope>;
    try {
      out = handler(immutable ? shareEnvelope(env) : copyEnvelope(env));
    } catch (err) {
      return Promise.reject(err);
    }
    if (!(out instanceof Promise) && typeof (out as { then?: unknown } | null)?.then !== "function") {
      try {
        return pass(out as ReplyEnvelope);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const pending = Promise.resolve(out);
    return new Promise<ReplyEnvelope>((resolve, reject) => {
      const waiting: Waiting = { due: Date.now() + timeoutMs, env, timeoutMs, reject };
      this.watch(waiting);
      pending.then(
        (reply) => {
          this.waiting.delete(waiting);
          try {
            resolve(pass(reply));
          } catch (err) {
            reject(err);
          }
        },
        (err: unknown) => {
          this.waiting.delete(waiting);
          reject(err);
        },
      );
    });
  }

  /**
   * Deadlines are checked by one sweep timer shared by every request in flight, instead of a timer armed and
   * cleared per message: nearly every message is answered within microseconds, and a timer per message was a
   * measurable share of an admission's cost. A late answer is noticed at most SWEEP_MS after its deadline.
   */
  private watch(w: Waiting): void {
    this.waiting.add(w);
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS);
  }

  private sweep(): void {
    const now = Date.now();
    for (const w of this.waiting) {
      if (w.due > now) continue;
      this.waiting.delete(w);
      w.reject(noAnswerError(NO_ANSWER_TEXT, { reason: "timeout" }));
    }
    if (this.waiting.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  async serve(kind: string, handler: ServeHandler): Promise<void> {
    this.servers.set(kind, handler);
  }

  async publish(topic: string, event: unknown): Promise<void> {
    const handlers = this.topics.get(topic);
    if (!handlers) return;
    for (const h of handlers) {
      queueMicrotask(() => {
        // a subscriber's failure, synchronous or not, must never escape into the publisher's process
        try {
          Promise.resolve(h(copy(event))).catch(() => {});
        } catch {
          /* ignored: best-effort fan-out */
        }
      });
    }
  }

  subscribe(topic: string, handler: EventHandler): () => void {
    let set = this.topics.get(topic);
    if (!set) this.topics.set(topic, (set = new Set()));
    set.add(handler);
    return () => set!.delete(handler);
  }

  async close(): Promise<void> {
    // requests still in flight keep their deadlines (the sweep stops by itself once none is waiting)
    this.closed = true;
    this.servers.clear();
    this.topics.clear();
  }
}
