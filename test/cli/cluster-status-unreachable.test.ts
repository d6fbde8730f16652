/**
 * `bun infra/cluster-status.ts NATS_URL` is documented as `bun run cli cluster status` with the same output and exit
 * codes (docs/operations.md, Metrics and checks). With no NATS server answering, the CLI printed one line
 * (`cli: connection refused`) and exited 1, while the script died of the unhandled rejection: nats.js's source
 * lines, a stack and a `Bun v…` banner on stderr (helper E, session 22). Both now say it in one line and exit 1.
 */
import { expect, test } from "bun:test";
import { resolve } from "node:path";
import { freePort } from "../../infra/free-port.ts";

const ROOT = resolve(import.meta.dir, "../..");

async function run(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn(["bun", ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env }, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

test("bun infra/cluster-status.ts with no NATS server answering says so in one line and exits 1, as the CLI does", async () => {
  const url = `nats://127.0.0.1:${await freePort()}`; // nothing listens there
  const script = await run(["infra/cluster-status.ts", url], {});
  expect(script.code).toBe(1);
  expect(script.stdout).toBe("");
  expect(script.stderr).toBe("cluster status: connection refused\n");

  const cli = await run(["infra/cli.ts", "cluster", "status"], { NATS_URL: url });
  expect(cli.code).toBe(1);
  expect(cli.stderr).toBe("cli: connection refused\n");
}, 60_000);
