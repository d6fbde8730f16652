/**
 * The in-process bus standing in for a transport that can lose a reply (NATS): `lossless: false` makes callers
 * retry per attempt, so a message whose first attempt committed may be sent again, possibly to another host, which
 * is what the actors' durable reply (actor_inbox) is for. Several hosts may share one: it is one bus.
 */
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import type { Transport } from "../../actors/transport/transport.ts";

export function lossyTransport(): Transport {
  const t = new InProcessTransport();
  return {
    name: "in-process, lossy",
    lossless: false,
    request: (env, timeoutMs) => t.request(env, timeoutMs),
    serve: (kind, handler) => t.serve(kind, handler),
    publish: (topic, event) => t.publish(topic, event),
    subscribe: (topic, handler) => t.subscribe(topic, handler),
    close: () => t.close(),
  };
}
