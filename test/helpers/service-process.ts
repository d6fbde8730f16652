/**
 * A real service in its own process (test/crash/fixtures/server.ts), so that a test can SIGKILL it and start another
 * on the same database and data directory: the crash and chaos tests (test/crash/*).
 */
import { join } from "node:path";

const FIXTURE = join(import.meta.dir, "..", "crash", "fixtures", "server.ts");

export interface ServiceProcess {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
}

/**
 * Boots the fixture on `databaseUrl` and waits for its READY line. `env` goes to the process (e.g. a crash switch
 * such as CHECKOUT_CRASH_AFTER_CAPTURE); `config` is laid over the fixture's service configuration.
 */
export async function startServiceProcess(opts: {
  databaseUrl: string;
  dataDir: string;
  env?: Record<string, string>;
  config?: Record<string, unknown>;
  extras?: Record<string, unknown>;
  timeoutMs?: number;
}): Promise<ServiceProcess> {
  const proc = Bun.spawn(["bun", FIXTURE], {
    env: { ...process.env, NODE_ENV: "test", DATABASE_URL: opts.databaseUrl, DATA_DIR: opts.dataDir, SERVICE_CONFIG: JSON.stringify(opts.config ?? {}), SERVICE_EXTRAS: JSON.stringify(opts.extras ?? {}), ...opts.env },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let buf = "";
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += new TextDecoder().decode(value);
    const m = /READY (\S+)/.exec(buf);
    if (m) {
      reader.releaseLock();
      return { url: m[1]!, proc };
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`server did not start: ${buf}`);
}
