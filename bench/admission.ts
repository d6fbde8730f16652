/**
 * Scenario `admission`: what authentication + rate-limit admission costs. One gateway (all plugins, limits ON),
 * two no-op routes in the same run:
 *  - GET /bench/plain     no auth, no limits;
 *  - GET /bench/admitted  agent-key authentication (HMAC, one message to the key's actor: constant-time compare,
 *                         revocation/expiry check, bucket admission) + rate headers, keys rotated across 200
 *                         ENTERPRISE keys (10000/min each) so every request is admitted, none refused.
 * Both paths are registered as having their own layer, so the global per-IP plugin does not refuse the plain
 * route after 500 requests. Load: wrk, 64 connections. Goal: admission costs <= 25% of throughput in-process.
 *
 * Baseline and both routes run interleaved for BENCH_ROUNDS rounds (default 3) and each keeps its median round
 * (bench/lib.ts `interleaved`), so load drifting on a shared machine does not decide the ratio.
 *
 * Run: `bun bench/admission.ts` (or `bun run bench admission`). BENCH_SECONDS per run (default 5), BENCH_ROUNDS.
 */
import { loadavg } from "node:os";
import { Elysia } from "elysia";
import { boot } from "../gateway/boot.ts";
import { authenticateAgent, clientIp } from "../gateway/plugins/auth.ts";
import { registerOwnLayer } from "../gateway/plugins/rate-limit.ts";
import type { Services } from "../gateway/services.ts";
import { createTestDatabase } from "../test/helpers/db.ts";
import { interleaved, machineLine, report, startBareBaseline, wrk } from "./lib.ts";

const durationSec = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 200;

registerOwnLayer(/^\/bench\//);
const routes = (svc: Services) =>
  new Elysia({ name: "bench-admission" })
    .get("/bench/plain", () => ({ success: true, data: {} }))
    .get("/bench/admitted", async ({ request, server, set }) => {
      await authenticateAgent(svc, { request, ip: clientIp(request, server), headers: set.headers as Record<string, string>, surface: "rest-agent", checkRoute: false });
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
    '  return wrk.format("GET", "/bench/admitted", { ["X-Agent-Api-Key"] = keys[(i % #keys) + 1] })',
    "end",
  ].join("\n");

  await wrk("warm-up", `${running.url}/bench/plain`, { durationSec: 2 });
  await wrk("warm-up", `${running.url}/bench/admitted`, { durationSec: 2, script });
  const [baseline, plain, admitted] = await interleaved(rounds, [
    { label: "bare", run: () => wrk("bare Bun.serve", bare.url, { durationSec }) },
    { label: "plain", run: () => wrk("GET /bench/plain (gateway, no auth, no limits)", `${running.url}/bench/plain`, { durationSec }) },
    { label: "admitted", run: () => wrk("GET /bench/admitted (agent key + rate admission)", `${running.url}/bench/admitted`, { durationSec, script }) },
  ]);
  console.log(`${machineLine()}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}, median of ${rounds} interleaved rounds of ${durationSec} s`);
  report("admission", baseline!, [plain!, admitted!]);
  const cost = 1 - admitted!.rps / plain!.rps;
  console.log(`\nadmission cost: ${(cost * 100).toFixed(1)}% of the no-auth route's throughput (goal <= 25%)`);
} finally {
  bare.stop();
  await running.stop();
  await db?.drop();
}
