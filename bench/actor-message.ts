// isolated costs of one read-only actor message: transport alone, host alone, client + transport + host
// ROOT=<another checkout> measures that checkout's runtime with the same script (before/after pairs)
const ROOT = process.env.ROOT ?? new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const { InProcessTransport } = await import(`${ROOT}/actors/transport/in-process.ts`);
const { ActorHost } = await import(`${ROOT}/actors/runtime/host.ts`);
const { ActorClient } = await import(`${ROOT}/actors/runtime/client.ts`);
const { defineActor } = await import(`${ROOT}/actors/runtime/define-actor.ts`);
const { Type: T } = await import("@sinclair/typebox");
const ping = defineActor({
  kind: "ping",
  persistence: "memory",
  initialState: () => ({}),
  messages: { ping: T.Object({ n: T.Number(), s: T.String() }) },
  handlers: { async ping(_ctx: unknown, m: { n: number }) { return { n: m.n, ok: true, list: ["a", "b"] }; } },
  reentrant: ["ping"],
});
const transport = new InProcessTransport();
const client = new ActorClient(transport);
const host = new ActorHost({ transport, sql: (() => { throw new Error("no sql"); }) as never, definitions: [ping], caller: client, reminderPollMs: 0 });
await host.start();
const ids = Array.from({ length: 200 }, (_, i) => `id${i}`);
async function m(label: string, n: number, f: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 30000; i++) await f(i);
  const out: number[] = [];
  for (let r = 0; r < 7; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await f(i);
    const c = process.cpuUsage(c0);
    out.push((c.user + c.system) / n);
  }
  out.sort((a, b) => a - b);
  console.log(label.padEnd(36), "cpu us/op median", out[3]!.toFixed(2), "min", out[0]!.toFixed(2));
}
const N = 50000;
await m("await resolved promise", N, () => Promise.resolve(1));
const direct = async (env: unknown) => ({ ok: true, value: env });
const t2 = new InProcessTransport();
await t2.serve("x", direct);
await m("transport.request, trivial server", N, (i) => t2.request({ msgId: "m" + i, kind: "x", id: ids[i % 200]!, type: "t", body: { n: i, s: "x" }, deadline: Date.now() + 1000, attempt: 1 }, 1000));
await m("host.dispatch (no transport)", N, (i) => host.dispatch({ msgId: "m" + i, kind: "ping", id: ids[i % 200]!, type: "ping", body: { n: i, s: "x" }, deadline: Date.now() + 1000, attempt: 1 }));
await m("transport + host", N, (i) => transport.request({ msgId: "m" + i, kind: "ping", id: ids[i % 200]!, type: "ping", body: { n: i, s: "x" }, deadline: Date.now() + 1000, attempt: 1 }, 1000));
await m("client.ask (all)", N, (i) => client.ask(ping, ids[i % 200]!, "ping", { n: i, s: "x" }));
await host.stop();
await transport.close();
