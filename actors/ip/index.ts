/**
 * The bucket actor of every non-agent owner: `ip/<addr>` (global 500/15 min, demo store 20/min, public REST
 * 30/min, MCP discovery 1000/min, failed log-ins 30/15 min), `user/<id>` (global per JWT user), `customer/<id>` (MCP
 * customer), `oauth/<client>:<user>` (MCP callers with an OAuth token) and `login/<e-mail digest>` (failed log-ins
 * per account). The owner string is the actor id.
 * Buckets live in memory: `admit`/`release`/`peek` never touch the database (nothing here is worth a write per
 * request). The failed-log-in buckets go through `admitDurable`/`releaseDurable`, which write every change before
 * answering (stored-buckets.ts); the others are handed over when an activation goes (a clean stop, a partition
 * moving away, idle passivation) to the next activation, which loads them.
 */
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../runtime/define-actor.ts";
import { handOverOnStop } from "../runtime/host.ts";
import { BucketTable } from "../agent/buckets.ts";
import { BucketSpecSchema, Release } from "../agent/messages.ts";
import { rateView } from "../agent/index.ts";
import { admitStored, catchUpBuckets, handOverBuckets, loadStoredBuckets, releaseStored } from "./stored-buckets.ts";

function table(memory: Map<string, unknown>): BucketTable {
  let t = memory.get("buckets") as BucketTable | undefined;
  if (!t) memory.set("buckets", (t = new BucketTable()));
  return t;
}

const Buckets = T.Object({ buckets: T.Array(BucketSpecSchema) });

export const ipActor = defineActor({
  kind: "ip",
  persistence: "memory",
  initialState: () => ({}),
  async onActivate(ctx) {
    await loadStoredBuckets(ctx.sql, ctx.id, table(ctx.memory), ctx.log);
  },
  messages: { admit: Buckets, peek: Buckets, release: Release, admitDurable: Buckets, releaseDurable: Release },
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
    /**
     * `admit` for buckets whose count must survive any restart (the failed-log-in buckets): decided on their stored
     * rows and written before the answer. Same reply, same refusal.
     */
    async admitDurable(ctx, m) {
      const result = await admitStored(ctx.sql, ctx.id, table(ctx.memory), m.buckets);
      // taken after the admission: a window it started began at or before this time, so `releaseDurable` credits it
      const consumedAt = Date.now();
      return { allowed: result.allowed, rate: rateView(result), consumedAt };
    },
    async releaseDurable(ctx, m) {
      await releaseStored(ctx.sql, ctx.id, table(ctx.memory), m.buckets, m.consumedAt);
      return null;
    },
  },
  // these three touch only the in-memory buckets, synchronously: no need to queue behind each other. The durable
  // two are not listed: they take turns (one read-decide-write at a time per owner).
  reentrant: ["admit", "release", "peek"],
});

const tableOf = (memory: ReadonlyMap<string, unknown>) => memory.get("buckets") as BucketTable | undefined;
handOverOnStop(ipActor.kind, handOverBuckets(tableOf, (id) => id), catchUpBuckets(tableOf, (id) => id));
