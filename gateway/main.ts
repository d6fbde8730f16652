/** Process entry: `bun gateway/main.ts start|gateway|actors`. */
import { ConfigError } from "../infra/config.ts";
import { log } from "../infra/log.ts";
import type { Role } from "../infra/boot-hooks.ts";
import { boot } from "./boot.ts";

const role = (process.argv[2] ?? "start") as Role;
if (!["start", "gateway", "actors"].includes(role)) {
  console.error(`usage: bun gateway/main.ts start|gateway|actors (got ${role})`);
  process.exit(2);
}

try {
  const running = await boot({ role });
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info("shutting down", { signal });
    await running.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  console.error(`start-up failed: ${(err as Error).message}`);
  process.exit(1);
}
