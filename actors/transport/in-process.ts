/**
 * The embedded default's bus. Envelopes are copied both ways with JSON's semantics, exactly what the NATS
 * transport does on the wire: an actor never shares a mutable object with its caller, and a value that would not
 * survive NATS (a Date, undefined, a Map) does not survive here either, so code that works here behaves the same
 * over NATS. The copy walks the value instead of printing and parsing JSON text (json-copy.ts): ~3x cheaper for
 * these small envelopes, and JSON was ~10x cheaper than structuredClone under Bun (docs/performance.md).
 */
import { jsonCopy as copy } from "./json-copy.ts";
import { ActorError } from "../runtime/errors.ts";
import type { ReplyEnvelope, RequestEnvelope } from "../runtime/envelope.ts";
import type { EventHandler, ServeHandler, Transport } from "./transport.ts";

export class InProcessTransport implements Transport {
  readonly name = "in-process";
  readonly lossless = true;
  private readonly servers = new Map<string, ServeHandler>();
  private readonly topics = new Map<string, Set<EventHandler>>();
  private closed = false;

  request(env: RequestEnvelope, timeoutMs: number): Promise<ReplyEnvelope> {
    const handler = this.servers.get(env.kind);
    if (!handler || this.closed) return Promise.reject(new ActorError("actor_unavailable", `no host serves actor kind ${env.kind}`));
    // One promise settled by whichever comes first (no Promise.race and its extra promises: this runs once per
    // actor message, several times per request).
    return new Promise<ReplyEnvelope>((resolve, reject) => {
      const timer = setTimeout(() => reject(new ActorError("actor_unavailable", `actor ${env.kind}/${env.id} did not answer in ${timeoutMs} ms`)), timeoutMs);
      const answered = (reply: ReplyEnvelope) => {
        clearTimeout(timer);
        try {
          resolve(copy(reply));
        } catch (err) {
          reject(err);
        }
      };
      const failed = (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      };
      try {
        handler(copy(env)).then(answered, failed);
      } catch (err) {
        failed(err);
      }
    });
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
    this.closed = true;
    this.servers.clear();
    this.topics.clear();
  }
}
