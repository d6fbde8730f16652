/**
 * Shared set-up of the multi-process tests: `bun gateway/main.ts actors|gateway` spawned as its own process, waited
 * for until it logs that it is up, its output kept line by line for the failure message.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";

const ROOT = join(import.meta.dir, "../..");

export interface RoleProc {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  output: string[];
  /** The gateway's listening URL, from its start line. */
  url?: string;
  /** An actor host's /metrics and /health listener (its origin), from its start line's `listener`. */
  metricsUrl?: string;
}

/** Calls `onLine` with every complete line of `stream`, until the stream ends. */
export async function pumpLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  }
}

/**
 * Spawns one role with `env` over the test process's environment and resolves once it is up (30 s at most; a role
 * that exits first rejects with its output). The process is pushed to `procs` at once, so the caller's teardown
 * kills it even when it never came up.
 */
export async function spawnRole(role: "actors" | "gateway", env: Record<string, string>, procs: RoleProc[]): Promise<RoleProc> {
  const proc = Bun.spawn(["bun", join(ROOT, "gateway/main.ts"), role], { cwd: ROOT, env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const p: RoleProc = { proc, output: [] };
  procs.push(p);
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  const want = role === "actors" ? "actor host started" : "gateway listening";
  const onLine = (line: string) => {
    p.output.push(line);
    if (line.includes(want)) {
      try {
        const started = JSON.parse(line) as { url?: string; listener?: string };
        p.url = started.url;
        p.metricsUrl = started.listener;
      } catch {
        // not JSON
      }
      ready();
    }
  };
  void pumpLines(proc.stdout, onLine);
  void pumpLines(proc.stderr, onLine);
  const died = proc.exited.then((code) => {
    throw new Error(`${role} exited with ${code}:\n${p.output.join("\n")}`);
  });
  const timeout = Bun.sleep(30_000).then(() => {
    throw new Error(`${role} not ready in 30 s:\n${p.output.join("\n")}`);
  });
  await Promise.race([readyP, died, timeout]);
  return p;
}
