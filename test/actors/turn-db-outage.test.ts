/** A turn that cannot reach the database answers 503 service_unavailable (retry later), not 500 internal_error. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import postgres from "postgres";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

// a server nobody listens on: connecting is refused at once
const unreachable = postgres("postgres://127.0.0.1:1/none", { connect_timeout: 2, max: 1 });

const reader = defineActor({
  kind: "outage-reader",
  initialState: () => ({}),
  messages: { read: T.Object({}), fail: T.Object({}) },
  handlers: {
    async read() {
      await unreachable`SELECT 1`;
      return "unreachable answered";
    },
    async fail() {
      throw new Error("a bug");
    },
  },
});

let db: TestDatabase;
let host: ActorHost;
let client: ActorClient;
beforeAll(async () => {
  db = await createTestDatabase();
  const transport = new InProcessTransport();
  client = new ActorClient(transport, { defaultTimeoutMs: 5000 });
  host = new ActorHost({ transport, sql: db.sql, definitions: [reader], caller: client, reminderPollMs: 0 });
  await host.start();
}, 60_000);
afterAll(async () => {
  await host.stop();
  await unreachable.end({ timeout: 0 });
  await db.drop();
});

test("a turn whose query cannot reach the database is refused with service_unavailable", async () => {
  await expect(client.ask(reader, "o1", "read", {})).rejects.toMatchObject({ code: "service_unavailable" });
});

test("any other failure of a turn stays internal_error", async () => {
  await expect(client.ask(reader, "o2", "fail", {})).rejects.toMatchObject({ code: "internal_error" });
});
