/**
 * Audit M-2: a process whose NATS_URL does not answer yet keeps waiting for it (NATS may be started after the roles),
 * but says so: a `waiting for NATS` warn line every waitLogMs naming the servers without their credentials and the
 * attempts so far, and an info line once it is connected (actors/transport/nats.ts NatsTransport.connect).
 */
import { afterAll, expect, test } from "bun:test";
import { NatsTransport, serversForLog } from "../../actors/transport/nats.ts";
import type { LogFields, Logger } from "../../infra/log.ts";
import { freePort } from "../../infra/nats/local-cluster.ts";

const lines: { level: string; msg: string; fields?: LogFields }[] = [];
const capture: Logger = {
  debug: (msg, fields) => lines.push({ level: "debug", msg, fields }),
  info: (msg, fields) => lines.push({ level: "info", msg, fields }),
  warn: (msg, fields) => lines.push({ level: "warn", msg, fields }),
  error: (msg, fields) => lines.push({ level: "error", msg, fields }),
  child: () => capture,
};

let server: ReturnType<typeof Bun.spawn> | undefined;
let transport: NatsTransport | undefined;
afterAll(async () => {
  await transport?.close().catch(() => {});
  server?.kill("SIGKILL");
  await server?.exited;
});

test("credentials are stripped from server URLs before they are logged", () => {
  expect(serversForLog(["nats://ops:s3cret@10.0.0.1:4222", "tls://tok3n@nats.example:4222", "nats://plain:4222", "u:p@host:4222", "host"])).toEqual([
    "nats://10.0.0.1:4222",
    "tls://nats.example:4222",
    "nats://plain:4222",
    "host:4222",
    "host",
  ]);
});

test("the first connection waits for a NATS that is not up yet, with a warn line every waitLogMs, then connects", async () => {
  const port = await freePort(); // nothing listens here yet
  const pending = NatsTransport.connect({ servers: `nats://ops:s3cret@127.0.0.1:${port}`, log: capture, waitLogMs: 300 });
  let settled = false;
  void pending.then(() => (settled = true), () => (settled = true));
  await Bun.sleep(1100);
  expect(settled).toBe(false); // still waiting: no failure, no exit
  const waits = lines.filter((l) => l.msg.startsWith("waiting for NATS"));
  expect(waits.length).toBeGreaterThanOrEqual(2);
  expect(waits.every((l) => l.level === "warn")).toBe(true);
  expect(waits.at(-1)!.fields).toMatchObject({ servers: [`nats://127.0.0.1:${port}`] });
  expect(waits.at(-1)!.fields!.attempts as number).toBeGreaterThan(1);
  expect(JSON.stringify(lines)).not.toContain("s3cret");

  server = Bun.spawn(["nats-server", "-a", "127.0.0.1", "-p", String(port)], { stdout: "ignore", stderr: "ignore" });
  transport = await pending;
  expect(lines.at(-1)).toMatchObject({ level: "info", msg: "connected to NATS", fields: { server: `127.0.0.1:${port}` } });
  const count = lines.length;
  await Bun.sleep(700);
  expect(lines.length).toBe(count); // no more waiting lines once connected
}, 20_000);
