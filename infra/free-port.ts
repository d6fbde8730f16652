/**
 * A TCP port free on 127.0.0.1 right now, for a child process that must be told its port before it binds (nats-server,
 * the embedded Postgres: neither can be given 0 and asked which it got).
 *
 * Picked at random below the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by
 * default) and checked bindable. A port inside that range, as a bind to port 0 gives, is what every other socket's
 * bind(0) and outgoing connect() draw from, so between this check and the child's own bind another process could take
 * it; the test suite, with many servers and connections at once, once did (session 22: two CI failures, a gateway's
 * and a test's black hole). Below the range only another explicit pick can collide, about 1 in 20,000 for two picks.
 * Where no such range can be read (not Linux) or it leaves no room, a port 0 pick as before.
 */
import { readFileSync } from "node:fs";

const LOWEST = 10_000;

/** The first port of the kernel's ephemeral range, or undefined where it cannot be read. */
function ephemeralRangeStart(): number | undefined {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : undefined;
  } catch {
    return undefined;
  }
}

/** Whether 127.0.0.1:`port` can be listened on now (closed again at once). */
function bindable(port: number): boolean {
  try {
    Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
    return true;
  } catch {
    return false;
  }
}

export async function freePort(): Promise<number> {
  const below = ephemeralRangeStart();
  if (below !== undefined && below - LOWEST >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = LOWEST + Math.floor(Math.random() * (below - LOWEST));
      if (bindable(port)) return port;
    }
  }
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = l.port;
  l.stop(true);
  return port;
}
