/** Request bodies and exchanges fetch cannot make on its own, for the body-limit tests. */
import { connect } from "node:net";
import type { TestServer } from "./server.ts";

/** One raw HTTP/1.1 exchange (fetch always sends the real length): the status line, headers and body as text. */
export function rawRequest(srv: TestServer, head: string, body: string): Promise<string> {
  const { hostname, port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(head + "\r\n\r\n" + body));
    let got = "";
    socket.on("data", (d) => (got += d.toString()));
    socket.on("close", () => resolve(got));
    socket.on("error", reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer")));
  });
}

/**
 * A chunked body (a ReadableStream has no Content-Length): `first` if given, then `chunk` again and again until
 * `total` bytes were sent. `state.sent` counts what the service pulled, to show it stopped reading early.
 */
export function repeatingBody(chunk: Uint8Array, total: number, first?: Uint8Array) {
  const state = { sent: 0 };
  let started = !first;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!started) {
        started = true;
        state.sent += first!.byteLength;
        return controller.enqueue(first!);
      }
      if (state.sent >= total) return controller.close();
      state.sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { body, state };
}
