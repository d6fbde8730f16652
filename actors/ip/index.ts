/**
 * The bucket actor of every non-agent owner: `ip/<addr>` (global 500/15 min, demo store 20/min, public REST
 * 30/min, MCP discovery 1000/min), `user/<id>` (global per JWT user), `customer/<id>` (MCP customer) and
 * `oauth/<client>:<user>` (MCP callers with an OAuth token). The owner string is the actor id. Memory only:
 * nothing here is worth a database write per request.
 */
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../runtime/define-actor.ts";
import { BucketTable } from "../agent/buckets.ts";
import { BucketSpecSchema, Release } from "../agent/messages.ts";
import { rateView } from "../agent/index.ts";

function table(memory: Map<string, unknown>): BucketTable {
  let t = memory.get("buckets") as BucketTable | undefined;
  if (!t) memory.set("buckets", (t = new BucketTable()));
  return t;
}

export const ipActor = defineActor({
  kind: "ip",
  persistence: "memory",
  initialState: () => ({}),
  messages: { admit: T.Object({ buckets: T.Array(BucketSpecSchema) }), peek: T.Object({ buckets: T.Array(BucketSpecSchema) }), release: Release },
  handlers: {
    admit(ctx, m) {
      const consumedAt = Date.now();
      const result = table(ctx.memory).admit(m.buckets);
      return { allowed: result.allowed, rate: rateView(result), consumedAt };
    },
    release(ctx, m) {
      table(ctx.memory).release(m.buckets, m.consumedAt);
      return null;
    },
    /** The tightest of these buckets as they stand, nothing consumed (an MCP message no layer counts). */
    peek(ctx, m) {
      return table(ctx.memory).peekTightest(m.buckets);
    },
  },
  // all three touch only the in-memory buckets, synchronously: no need to queue behind each other
  reentrant: ["admit", "release", "peek"],
});
