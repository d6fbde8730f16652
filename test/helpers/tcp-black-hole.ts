/**
 * A real black-holed TCP address on loopback, for tests of connect deadlines and of attempts raced over several
 * addresses: a SYN sent to it is never answered, as when a firewall drops it, and the connect stays pending
 * (SYN-SENT) until the client gives up or closes it.
 *
 * How: a listening socket made through libc (bun:ffi) with a backlog of 0 that never accepts. Linux queues one
 * connection for it (the filler, opened here) and drops every SYN after that while the queue is full. Bun's own
 * listeners (Bun.listen, node:net) accept at once, so their queue never fills; hence libc.
 *
 * `pendingConnects()` counts the sockets of this network namespace (this machine, here) still in SYN-SENT towards it
 * (/proc/net/tcp; the black hole's port is its own, so they are this test's): a connect attempt
 * abandoned but not closed stays there for about two minutes (the kernel's SYN retries), so a test can tell a
 * cancelled attempt that was closed from one that leaked. Linux only, like the service's deployment.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";

const AF_INET = 2;
const SOCK_STREAM = 1;

const libc = dlopen("libc.so.6", {
  socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
});

export interface TcpBlackHole {
  readonly address: string;
  readonly port: number;
  /** Sockets of this process in SYN-SENT towards address:port right now. */
  pendingConnects(): number;
  close(): void;
}

/** `sockaddr_in` for an IPv4 address and port (family in host order, port and address in network order). */
function sockaddrIn(address: string, port: number): Uint8Array {
  const sa = new Uint8Array(16);
  new DataView(sa.buffer).setUint16(0, AF_INET, true);
  new DataView(sa.buffer).setUint16(2, port, false);
  sa.set(address.split(".").map(Number), 4);
  return sa;
}

/** /proc/net/tcp writes an IPv4 address as the 32-bit word in host (little-endian) order, in hex. */
function procAddress(address: string, port: number): string {
  const hex = address
    .split(".")
    .map((b) => Number(b).toString(16).padStart(2, "0").toUpperCase())
    .reverse()
    .join("");
  return `${hex}:${port.toString(16).padStart(4, "0").toUpperCase()}`;
}

/**
 * A black hole on `address` (an IPv4 loopback address), on `port` or a free one. Resolves once the filler
 * connection is queued, i.e. once every further SYN is dropped.
 */
export async function openTcpBlackHole(address = "127.0.0.1", port = 0): Promise<TcpBlackHole> {
  const fd = libc.symbols.socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw new Error("socket() failed");
  const sa = sockaddrIn(address, port);
  if (libc.symbols.bind(fd, ptr(sa), sa.byteLength) !== 0 || libc.symbols.listen(fd, 0) !== 0) {
    libc.symbols.close(fd);
    throw new Error(`cannot listen on ${address}:${port}`);
  }
  const bound = new Uint8Array(16);
  const len = new Uint32Array([16]);
  libc.symbols.getsockname(fd, ptr(bound), ptr(len));
  const boundPort = new DataView(bound.buffer).getUint16(2, false);
  const filler: Socket = await new Promise((resolve, reject) => {
    const s = connect({ host: address, port: boundPort });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
  const remote = procAddress(address, boundPort);
  return {
    address,
    port: boundPort,
    pendingConnects() {
      const lines = readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1);
      return lines.filter((line) => {
        const f = line.trim().split(/\s+/);
        return f[2] === remote && f[3] === "02";
      }).length;
    },
    close() {
      filler.destroy();
      libc.symbols.close(fd);
    },
  };
}
