/**
 * Over NATS a moved partition of the rate-limit kinds is served by its new owner only once every other live host has
 * released it, its hand-over written (actors/transport/nats.ts `acquire`, session 14). The timed backstop from before
 * that (a 0.5 s hold before each new ip/agent activation's load after a placement change, re-reads at 1 s and 3 s)
 * still ran on top of it: the first requests of every new activation, on the joiner and on the host that stayed,
 * waited half a second after each change. It runs now only for a move no release covered: while a host that does not
 * answer releases (an older version, mid rolling upgrade) is live. Two hosts and a caller over a private nats-server
 * (the real `ip` kind's subjects, kept off the shared server), each test with its own membership bucket.
 */
import { expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { ipActor } from "../../actors/ip/index.ts";
import { ipOverNats } from "../helpers/ip-over-nats.ts";

const kit = ipOverNats();
const { PARTITIONS, TTL_MS, spec, opened, startHost, caller, ownersOf, settled, timedAdmit } = kit;

test("after a host joins, the first requests of new ip activations on the joiner and on the host that stayed answer without a half-second hold", async () => {
  const bucket = `actor_hosts_mnh_1`;
  const [a, b] = ["mnh-a", "mnh-b"];
  const ta = await startHost(bucket, a);
  const { client } = await caller(bucket);
  const tb = await startHost(bucket, b); // partitions move from a to b, released by a
  const moved = ownersOf(b, [a, b], "moved", 8);
  const kept = ownersOf(a, [a, b], "kept", 8);
  await settled(new Map([[a, ta], [b, tb]]), [a, b], [...moved, ...kept]);
  // each a new activation right after the change (its load reads: rows may have been handed over)
  const first = await Promise.all([...moved.slice(0, 4), ...kept.slice(0, 4)].map((o) => timedAdmit(client, o)));
  // the same again (new activations, loads that read) once a hold would be over: what such a request costs here
  const then = await Promise.all([...moved.slice(4), ...kept.slice(4)].map((o) => timedAdmit(client, o)));
  expect([...first, ...then].map((x) => x.remaining)).toEqual(Array(16).fill(spec.limit - 1));
  const fastest = (xs: { ms: number }[]) => Math.min(...xs.map((x) => x.ms));
  const extra = (from: number) => Math.round(fastest(first.slice(from, from + 4)) - fastest(then.slice(from, from + 4)));
  // before: every first one waited the 0.5 s hold before its load (a's too: it saw the live hosts change)
  expect({ joiner: extra(0) < 300, stayed: extra(4) < 300 }).toEqual({ joiner: true, stayed: true });
}, 60_000);

test("while a live host does not answer releases (a rolling upgrade), a joiner still re-reads at 1 s and 3 s and folds in a hand-over that landed after its load", async () => {
  const bucket = `actor_hosts_mnh_2`;
  const [a, b, legacy] = ["mnh2-a", "mnh2-b", "mnh2-legacy"];
  const ta = await startHost(bucket, a);
  const { client, gateway } = await caller(bucket);
  // an older host's heartbeat: serves ip, no `releases` (it would not answer; nothing routed to it is asked here)
  const kv = await new Kvm(gateway.nc).open(bucket);
  const beat = () =>
    kv.put(legacy, JSON.stringify({ hostId: legacy, kinds: [ipActor.kind], partitions: PARTITIONS, ttlMs: TTL_MS, activations: {}, owned: {}, startedAt: Date.now(), pid: 1, hostname: "legacy" }));
  await beat();
  const beating = setInterval(() => void beat().catch(() => {}), 500);
  opened.push({ close: async () => clearInterval(beating) });
  const owner = ownersOf(b, [a, b, legacy], "late", 1)[0]!;
  await settled(new Map([[a, ta]]), [a, legacy], [owner]);
  const tb = await startHost(bucket, b);
  await settled(new Map([[a, ta], [b, tb]]), [a, b, legacy], [owner]);
  expect((await timedAdmit(client, owner)).remaining).toBe(spec.limit - 1);
  // the older host's hand-over lands only now, after b loaded: 3 units in a window begun a second earlier
  const start = Date.now() - 1000;
  await kit.db.sql`INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
    VALUES (${owner}, ${spec.id}, ${start}, ${start + spec.windowMs}, 3, false)`;
  await Bun.sleep(3_500); // past the last re-read (3 s after the move)
  expect((await timedAdmit(client, owner)).remaining).toBe(spec.limit - 5);
}, 60_000);
