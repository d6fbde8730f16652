/**
 * Actor round trip, 64 requests in flight: in-process, over NATS (ActorClient → NatsTransport → ActorHost on the
 * other connection), and raw NATS request/reply measured in the same run as the baseline. Memory-persistence
 * actor (no Postgres), so the figures are the runtime + transport cost, not the database's.
 *
 *   bun bench/actors.ts            # NATS_URL or nats://127.0.0.1:4222; BENCH_SECONDS (default 5) per phase
 */
import { Type as T } from "@sinclair/typebox";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { ActorClient } from "../actors/runtime/client.ts";
import { defineActor } from "../actors/runtime/define-actor.ts";
import { ActorHost } from "../actors/runtime/host.ts";
import { InProcessTransport } from "../actors/transport/in-process.ts";
import { NatsTransport } from "../actors/transport/nats.ts";
import type { Transport } from "../actors/transport/transport.ts";
import type { Sql } from "../infra/db.ts";
import { setLogLevel } from "../infra/log.ts";

setLogLevel("warn");
const NATS = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IN_FLIGHT = 64;

const counter = defineActor({
  kind: "bench-counter",
  persistence: "memory",
  initialState: () => ({ n: 0 }),
  messages: { inc: T.Object({ by: T.Integer(), note: T.String() }) },
  handlers: {
    async inc(ctx, body) {
      ctx.state.n += body.by;
      return { n: ctx.state.n };
    },
  },
});

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  n: number;
}

/** IN_FLIGHT workers, each sending its next request when the previous answers; warm-up, then SECONDS measured. */
async function measure(name: string, once: (worker: number, i: number) => Promise<unknown>): Promise<Result> {
  const warmEnd = performance.now() + 1000;
  let measuring = false;
  let end = Number.POSITIVE_INFINITY;
  const lat: number[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, w) => {
      let i = 0;
      for (;;) {
        const t0 = performance.now();
        if (!measuring && t0 >= warmEnd) {
          measuring = true;
          started = t0;
          end = t0 + SECONDS * 1000;
        }
        if (t0 >= end) return;
        await once(w, i++);
        if (measuring && t0 >= started) lat.push(performance.now() - t0);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  const r = { name, n: lat.length, rps: lat.length / SECONDS, p50: q(0.5), p99: q(0.99) };
  console.log(`${name.padEnd(28)} ${Math.round(r.rps).toString().padStart(8)} req/s   p50 ${r.p50.toFixed(3)} ms   p99 ${r.p99.toFixed(3)} ms`);
  return r;
}

function actorPhase(client: ActorClient) {
  return (w: number, i: number) => client.ask(counter, `c${w}`, "inc", { by: 1, note: `request ${i}` });
}

async function startHost(transport: Transport): Promise<ActorHost> {
  // a memory actor never touches the database, and reminders are off: no Postgres needed for this bench
  const host = new ActorHost({ transport, sql: undefined as unknown as Sql, definitions: [counter], caller: new ActorClient(transport), reminderPollMs: 0 });
  await host.start();
  return host;
}

const mode = process.argv[2];
if (mode) {
  // a server child: exit when the bench process (which holds our stdin) is gone, however it ended
  void (async () => {
    for await (const _ of Bun.stdin.stream()) {
      // nothing is sent
    }
    process.exit(0);
  })();
}
if (mode === "--serve-raw") {
  // child: raw responder
  const nc = await connect({ servers: NATS });
  nc.subscribe(process.argv[3], { callback: (_e, m) => void m.respond(m.data) });
  await nc.flush();
  console.log("READY");
  await new Promise(() => {});
} else if (mode === "--serve-host") {
  // child: an actor host process, as `bun run actors` would be
  const t = await NatsTransport.connect({ servers: NATS, bucket: process.argv[3], replicas: 1, hostId: `bench-${process.pid}` });
  const host = new ActorHost({ transport: t, sql: undefined as unknown as Sql, definitions: [counter], caller: new ActorClient(t), reminderPollMs: 0 });
  t.attachHost(host);
  await host.start();
  console.log("READY");
  process.on("SIGTERM", () => process.exit(0));
  await new Promise(() => {});
}

/** Starts this file in a server mode as a separate process (the caller and the server each get a core). */
async function child(args: string[]): Promise<{ kill(): void }> {
  const proc = Bun.spawn(["bun", import.meta.path, ...args], { stdin: "pipe", stdout: "pipe", stderr: "inherit", env: { ...process.env, LOG_LEVEL: "warn" } });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("READY")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`bench child ${args.join(" ")} exited`);
    out += new TextDecoder().decode(value);
  }
  return { kill: () => proc.kill("SIGKILL") };
}

const median = (xs: Result[]): Result => [...xs].sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)];

console.log(`actor round trip, ${IN_FLIGHT} in flight, ${SECONDS} s per phase (after 1 s warm-up); NATS ${NATS}`);
console.log("server side in a separate process; raw and actor phases alternate (shared machine), medians reported");

// raw NATS request/reply with an envelope-sized JSON payload: the ceiling for anything over NATS
const rawSubject = `bench.raw.${process.pid}`;
const rawServer = await child(["--serve-raw", rawSubject]);
const bucket = `actor_hosts_bench_${process.pid}`;
const hostProc = await child(["--serve-host", bucket]);
const caller = await connect({ servers: NATS });
const payload = JSON.stringify({ msgId: crypto.randomUUID(), kind: "bench-counter", id: "c0", type: "inc", body: { by: 1, note: "request 0" }, deadline: Date.now(), attempt: 1, waitMs: 3000 });
const gwT = await NatsTransport.connect({ servers: NATS, bucket });
const gwClient = new ActorClient(gwT);
const raws: Result[] = [];
const nats: Result[] = [];
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
for (let r = 0; r < rounds; r++) {
  raws.push(await measure("raw NATS request/reply", () => caller.request(rawSubject, payload, { timeout: 3000 })));
  nats.push(await measure("actor over NATS", actorPhase(gwClient)));
}
rawServer.kill();
hostProc.kill();
await caller.close();
await gwT.close();

const inproc = new InProcessTransport();
const inHost = await startHost(inproc);
const inProcess = await measure("actor, in-process", actorPhase(new ActorClient(inproc)));
await inHost.stop();
await inproc.close();

const admin = await connect({ servers: NATS });
await (await new Kvm(admin).open(bucket)).destroy().catch(() => {});
await admin.close();

const raw = median(raws);
const overNats = median(nats);
const ratio = overNats.rps / raw.rps;
console.log("medians:");
for (const r of [raw, overNats, inProcess]) {
  console.log(`  ${r.name.padEnd(26)} ${Math.round(r.rps).toString().padStart(8)} req/s   p50 ${r.p50.toFixed(3)} ms   p99 ${r.p99.toFixed(3)} ms`);
}
console.log(`actor over NATS / raw NATS: ${(ratio * 100).toFixed(0)}% (goal >= 60%); in-process / raw NATS: ${((inProcess.rps / raw.rps) * 100).toFixed(0)}%`);
process.exit(0);
