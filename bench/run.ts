/** `bun run bench <scenario>`: runs bench/<scenario>.ts (each scenario measures its own bare baseline). */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const scenario = process.argv[2];
const dir = import.meta.dir;
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && !["run.ts", "lib.ts", "search-queries.ts"].includes(f))
  .map((f) => f.replace(/\.ts$/, ""));
if (!scenario || !existsSync(join(dir, `${scenario}.ts`))) {
  console.error(`usage: bun run bench <scenario>\nscenarios: ${available.join(", ")}`);
  process.exit(2);
}
const proc = Bun.spawn(["bun", join(dir, `${scenario}.ts`), ...process.argv.slice(3)], { stdout: "inherit", stderr: "inherit", env: { ...process.env, RATE_LIMITS_ENABLED: "false" } });
process.exit(await proc.exited);
