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

/** A socket bound to address:port (0: a free one), not listening; undefined when that address:port is taken. */
function bindTcp(address: string, port: number): { fd: number; port: number } | undefined {
  const fd = libc.symbols.socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw new Error("socket() failed");
  const sa = sockaddrIn(address, port);
  if (libc.symbols.bind(fd, ptr(sa), sa.byteLength) !== 0) {
    libc.symbols.close(fd);
    return undefined;
  }
  const bound = new Uint8Array(16);
  const len = new Uint32Array([16]);
  libc.symbols.getsockname(fd, ptr(bound), ptr(len));
  return { fd, port: new DataView(bound.buffer).getUint16(2, false) };
}

/** Makes the bound socket `fd` a black hole: listening with a backlog of 0, its one queue place taken by a filler. */
async function blackHoleOn(fd: number, address: string, port: number, onClose: () => void): Promise<TcpBlackHole> {
  if (libc.symbols.listen(fd, 0) !== 0) {
    libc.symbols.close(fd);
    throw new Error(`cannot listen on ${address}:${port}`);
  }
  const filler: Socket = await new Promise((resolve, reject) => {
    const s = connect({ host: address, port });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
  const remote = procAddress(address, port);
  return {
    address,
    port,
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
      onClose();
    },
  };
}

/**
 * A black hole on `address` (an IPv4 loopback address), on `port` or a free one. Resolves once the filler
 * connection is queued, i.e. once every further SYN is dropped.
 */
export async function openTcpBlackHole(address = "127.0.0.1", port = 0): Promise<TcpBlackHole> {
  const bound = bindTcp(address, port);
  if (!bound) throw new Error(`cannot listen on ${address}:${port}`);
  return blackHoleOn(bound.fd, address, bound.port, () => {});
}

/**
 * address:port held for a test: bound but not listening, so a connect to it is refused as to a port nothing uses,
 * and no other test file's server or connection can take it meanwhile. Tests that want "nothing at 127.0.0.1 on
 * the port of the server at 127.0.0.2" hold it: the suite runs many files at once, and a port only seen free
 * when picked was once taken by another file's socket before the test bound it (a CI run's "cannot listen").
 */
export interface TcpPortHold {
  readonly address: string;
  readonly port: number;
  /** The held port as a black hole; its close() holds the port again. */
  blackHole(): Promise<TcpBlackHole>;
  /** Lets the port go, for a listener of the test's own bound just after; `hold()` takes it back. */
  release(): void;
  /** Takes the port back after `release()` (false when something else has it). */
  hold(): boolean;
}

/** Holds address:port, or undefined when it is taken. */
export function holdTcpPort(address: string, port: number): TcpPortHold | undefined {
  let fd: number | undefined = bindTcp(address, port)?.fd;
  if (fd === undefined) return undefined;
  const hold: TcpPortHold = {
    address,
    port,
    async blackHole() {
      if (fd === undefined) throw new Error(`${address}:${port} is not held`);
      const listening = fd;
      fd = undefined;
      return blackHoleOn(listening, address, port, () => void hold.hold());
    },
    release() {
      if (fd !== undefined) libc.symbols.close(fd);
      fd = undefined;
    },
    hold() {
      if (fd === undefined) fd = bindTcp(address, port)?.fd;
      return fd !== undefined;
    },
  };
  return hold;
}

/**
 * Starts a listener of the test's (`listen`, given port 0, tells the port it got) until `address` can be held at that
 * same port too, for tests of one port asked at two addresses: the listener serves the second address, the hold
 * stands for the first.
 */
export function listenBesideHold<T>(listen: () => { server: T; port: number; stop(): void }, address = "127.0.0.1"): { server: T; port: number; hold: TcpPortHold } {
  for (let attempt = 0; attempt < 20; attempt++) {
    const started = listen();
    const hold = holdTcpPort(address, started.port);
    if (hold) return { server: started.server, port: started.port, hold };
    started.stop();
  }
  throw new Error(`no port free at ${address} beside the test's listener after 20 tries`);
}
