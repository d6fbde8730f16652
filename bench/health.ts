/**
 * Scenario `health`: GET /api/v1/health on the full gateway (all plugins: request id, transparency headers,
 * errors, metrics) against a bare Bun.serve in the same run. Goal: >= 80% of the bare throughput.
 * Uses DATABASE_URL when set (else a scratch database on the local Postgres, else embedded Postgres).
 */
import { boot } from "../gateway/boot.ts";
import { createTestDatabase } from "../test/helpers/db.ts";
import { interleaved, machineLine, report, startBareBaseline, wrk } from "./lib.ts";

const durationSec = Number(process.env.BENCH_SECONDS ?? 5);
const db = process.env.DATABASE_URL ? undefined : await createTestDatabase({ migrate: false });
const running = await boot({
  role: "start",
  env: {},
  config: { DATABASE_URL: process.env.DATABASE_URL ?? db!.url, PORT: 0, DATA_DIR: "/tmp/acs-bench-data", SEED_DEMO: false, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false },
});
const bare = startBareBaseline();
try {
  await wrk("warm-up", `${running.url}/api/v1/health`, { durationSec: 2 });
  const [baseline, health] = await interleaved(Number(process.env.BENCH_ROUNDS ?? 3), [
    { label: "bare Bun.serve", run: () => wrk("bare Bun.serve", bare.url, { durationSec }) },
    { label: "health", run: () => wrk("GET /api/v1/health (full gateway)", `${running.url}/api/v1/health`, { durationSec }) },
  ]);
  console.log(machineLine());
  report("health (median of interleaved rounds)", baseline!, [health!]);
} finally {
  bare.stop();
  await running.stop();
  await db?.drop();
}
