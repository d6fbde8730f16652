/**
 * Scenario `admission`: what authentication + rate-limit admission costs. One gateway (all plugins, limits ON),
 * two no-op routes in the same run:
 *  - GET /bench/plain     no auth, no limits;
 *  - GET /bench/admitted  agent-key authentication (HMAC, one message to the key's actor: constant-time compare,
 *                         revocation/expiry check, bucket admission; answered synchronously by the loaded local
 *                         activation, `authenticateAgentNow`) + rate headers, keys rotated across 200
 *                         ENTERPRISE keys (10000/min each) so every request is admitted, none refused.
 * Both paths are registered as having their own layer, so the global per-IP plugin does not refuse the plain
 * route after 500 requests. Load: wrk, 64 connections. Goal: admission costs <= 25% of throughput in-process.
 *
 * Baseline and both routes run interleaved for BENCH_ROUNDS rounds (default 3) and each keeps its median round
 * (bench/lib.ts `interleaved`), so load drifting on a shared machine does not decide the ratio.
 *
 * Then the same two routes in-process (`app.handle`, no sockets, no wrk): server CPU µs per request in batches of
 * 64 concurrent requests per event-loop turn, interleaved rounds, median. On a shared machine this is the steadier
 * figure: other processes slow it down but do not add to it.
 *
 * BENCH_PARTS=1 adds a decomposition of the admitted route on the wire: routes that stop after each step of
 * admission (read the key header; + the keyed HMAC; + the `authorize` message to the key's actor), run interleaved
 * with plain and admitted, server CPU µs per request each (docs/performance.md, "Where the wire cost goes").
 *
 * Run: `bun bench/admission.ts` (or `bun run bench admission`). BENCH_SECONDS per run (default 5), BENCH_ROUNDS.
 * BENCH_WRK=0 skips the wrk runs (in-process figures only: quick before/after pairs on a shared machine);
 * BENCH_IN_PROCESS_ROUNDS (default 5) sets how many in-process rounds the median is taken of.
 */
import { loadavg } from "node:os";
import { Elysia } from "elysia";
import { createApp } from "../gateway/app.ts";
import { boot } from "../gateway/boot.ts";
import { agentActor } from "../actors/agent/index.ts";
import { hashAgentKey, parseAgentKey } from "../actors/agent/keys.ts";
import { pepper } from "../gateway/identity.ts";
import { agentRequestAddress, authenticateAgentNow } from "../gateway/plugins/auth.ts";
import { registerOwnLayer } from "../gateway/plugins/rate-limit.ts";
import type { Services } from "../gateway/services.ts";
import { createTestDatabase } from "../test/helpers/db.ts";
import { interleaved, machineLine, report, startBareBaseline, wrk, type LoadResult } from "./lib.ts";

const durationSec = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 200;

registerOwnLayer(/^\/bench\//);
const parts = process.env.BENCH_PARTS === "1";
/** The steps of `authenticateAgentNow`, cumulatively: each part route stops after one more step. */
const PARTS = ["key", "hmac", "authorize"] as const;
const routes = (svc: Services) =>
  new Elysia({ name: "bench-admission" })
    .get("/bench/plain", () => ({ success: true, data: {} }))
    .get("/bench/part/:step", ({ request, params }) => {
      const raw = request.headers.get("x-agent-api-key") ?? "";
      if (params.step === "key") return { success: true, data: {} };
      const hash = hashAgentKey(raw.trim(), pepper(svc));
      if (params.step === "hmac") return { success: true, data: {} };
      const body = { hash, method: "GET", path: "", checkRoute: false, limits: { surface: "rest-agent", ip: "" } };
      const reply = svc.actors.askNow!(agentActor, parseAgentKey(raw)!, "authorize", body);
      if (reply instanceof Promise) throw new Error("bench: the key's actor did not answer synchronously");
      return { success: true, data: {} };
    })
    .get("/bench/admitted", async ({ request, server, set }) => {
      // what an agent route's request hook does (rate-limit.ts `admitAgentEarly`), minus the route access check
      await authenticateAgentNow(svc, { request, ip: agentRequestAddress(svc, request, server), headers: set.headers as Record<string, string>, surface: "rest-agent", checkRoute: false });
      return { success: true, data: {} };
    });

const db = process.env.DATABASE_URL ? undefined : await createTestDatabase({ migrate: false });
const running = await boot({
  role: "start",
  env: {},
  extraModules: [routes],
  config: {
    DATABASE_URL: process.env.DATABASE_URL ?? db!.url,
    PORT: 0,
    DATA_DIR: "/tmp/acs-bench-data",
    SEED_DEMO: true,
    LOG_LEVEL: "error",
    RATE_LIMITS_ENABLED: true,
  },
});
const bare = startBareBaseline();
try {
  const login = await fetch(`${running.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: running.config.ADMIN_EMAIL, password: running.config.ADMIN_PASSWORD }),
  });
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const keys: string[] = [];
  for (let i = 0; i < KEYS; i++) {
    const r = await fetch(`${running.url}/api/v1/agent-keys`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: `bench ${i}`, tier: "ENTERPRISE" }),
    });
    keys.push(((await r.json()) as { data: { key: string } }).data.key);
  }
  const script = [
    `local keys = {${keys.map((k) => JSON.stringify(k)).join(",")}}`,
    "local i = 0",
    "request = function()",
    "  i = i + 1",
    '  return wrk.format("GET", path, { ["X-Agent-Api-Key"] = keys[(i % #keys) + 1] })',
    "end",
  ].join("\n");
  const keyed = (path: string) => `local path = "${path}"\n${script}`;

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  if (process.env.BENCH_WRK !== "0") {
    await wrk("warm-up", `${running.url}/bench/plain`, { durationSec: 2 });
    await wrk("warm-up", `${running.url}/bench/admitted`, { durationSec: 2, script: keyed("/bench/admitted") });
    if (parts) for (const p of PARTS) await wrk("warm-up", `${running.url}/bench/part/${p}`, { durationSec: 1, script: keyed(`/bench/part/${p}`) });
    // Server CPU per request beside req/s: wrk runs in its own process, so this process's CPU during a run is the
    // server's work, which other load on a shared machine slows down but does not inflate.
    const cpu = new Map<string, number[]>();
    const measured = async (label: string, run: () => Promise<LoadResult>) => {
      const c0 = process.cpuUsage();
      const r = await run();
      const c = process.cpuUsage(c0);
      const perReq = (c.user + c.system) / Math.max(1, r.rps * durationSec);
      cpu.set(label, [...(cpu.get(label) ?? []), perReq]);
      return r;
    };
    const partRuns = (parts ? PARTS : []).map((p) => ({
      label: p,
      run: () => measured(p, () => wrk(`part: ${p}`, `${running.url}/bench/part/${p}`, { durationSec, script: keyed(`/bench/part/${p}`) })),
    }));
    const [baseline, plain, admitted] = await interleaved(rounds, [
      { label: "bare", run: () => measured("bare", () => wrk("bare Bun.serve", bare.url, { durationSec })) },
      { label: "plain", run: () => measured("plain", () => wrk("GET /bench/plain (gateway, no auth, no limits)", `${running.url}/bench/plain`, { durationSec })) },
      {
        label: "admitted",
        run: () => measured("admitted", () => wrk("GET /bench/admitted (agent key + rate admission)", `${running.url}/bench/admitted`, { durationSec, script: keyed("/bench/admitted") })),
      },
      ...partRuns,
    ]);
    console.log(`${machineLine()}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}, median of ${rounds} interleaved rounds of ${durationSec} s`);
    report("admission", baseline!, [plain!, admitted!]);
    const cpuPlain = median(cpu.get("plain")!);
    const cpuAdmitted = median(cpu.get("admitted")!);
    console.log(`\nserver CPU per request (median round): bare ${median(cpu.get("bare")!).toFixed(1)} µs, plain ${cpuPlain.toFixed(1)} µs, admitted ${cpuAdmitted.toFixed(1)} µs`);
    if (parts) {
      // each step's cost is the difference to the step before it (median rounds; ±1 µs between runs)
      let before = cpuPlain;
      const steps = [...PARTS.map((p) => [p, median(cpu.get(p)!)] as const), ["headers + principal (= admitted)", cpuAdmitted] as const];
      console.log("wire decomposition, server CPU µs per request (cumulative → step):");
      for (const [label, value] of steps) {
        console.log(`  ${label.padEnd(34)} ${value.toFixed(1)} → +${(value - before).toFixed(1)}`);
        before = value;
      }
    }
    const cost = 1 - admitted!.rps / plain!.rps;
    console.log(`admission cost: ${(cost * 100).toFixed(1)}% of the no-auth route's throughput (goal <= 25%); by server CPU per request ${((1 - cpuPlain / cpuAdmitted) * 100).toFixed(1)}%`);
  }

  // In-process: the same app the server runs, called with app.handle (ip "unknown": there is no socket).
  const app = createApp(running.services, [routes]);
  const BATCH = 64;
  const perRequestCpu = async (path: string, keyed: boolean, n: number): Promise<number> => {
    const c0 = process.cpuUsage();
    for (let done = 0; done < n; done += BATCH) {
      await Promise.all(
        Array.from({ length: BATCH }, async (_, j) => {
          const headers: Record<string, string> = keyed ? { "x-agent-api-key": keys[(done + j) % KEYS]! } : {};
          const res = await app.handle(new Request(`http://127.0.0.1${path}`, { headers }));
          if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
        }),
      );
      // one event-loop turn per batch, as a server has between socket reads (Elysia's afterResponse runs there)
      await new Promise<void>((r) => setImmediate(r));
    }
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  const IN_PROCESS_N = 12_800;
  await perRequestCpu("/bench/plain", false, IN_PROCESS_N);
  await perRequestCpu("/bench/admitted", true, IN_PROCESS_N);
  const inPlain: number[] = [];
  const inAdmitted: number[] = [];
  const inRounds = Number(process.env.BENCH_IN_PROCESS_ROUNDS ?? 5);
  for (let r = 0; r < inRounds; r++) {
    inPlain.push(await perRequestCpu("/bench/plain", false, IN_PROCESS_N));
    inAdmitted.push(await perRequestCpu("/bench/admitted", true, IN_PROCESS_N));
  }
  const ip = median(inPlain);
  const ia = median(inAdmitted);
  console.log(`in-process (app.handle, batches of ${BATCH}), CPU per request, median of ${inRounds} rounds: plain ${ip.toFixed(1)} µs, admitted ${ia.toFixed(1)} µs; admission ${(ia - ip).toFixed(1)} µs = ${((1 - ip / ia) * 100).toFixed(1)}% of the admitted request`);
} finally {
  bare.stop();
  await running.stop();
  await db?.drop();
}
