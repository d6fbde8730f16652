/**
 * `ip/<address>`: the per-IP rate-limit buckets (global 500/15 min, demo store 20/min, public REST 30/min, MCP
 * discovery 1000/min). Memory only: nothing here is worth a database write per request.
 */
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../runtime/define-actor.ts";
import { BucketTable } from "../agent/buckets.ts";
import { BucketSpecSchema } from "../agent/messages.ts";
import { rateView } from "../agent/index.ts";

export const ipActor = defineActor({
  kind: "ip",
  persistence: "memory",
  initialState: () => ({}),
  messages: { admit: T.Object({ buckets: T.Array(BucketSpecSchema) }) },
  handlers: {
    async admit(ctx, m) {
      let table = ctx.memory.get("buckets") as BucketTable | undefined;
      if (!table) ctx.memory.set("buckets", (table = new BucketTable()));
      const result = table.admit(m.buckets);
      return { allowed: result.allowed, rate: rateView(result) };
    },
  },
});
