/**
 * Picks the bus from configuration: NATS when NATS_URL is set (distributed roles), else the in-process bus
 * (embedded default). See the top of nats.ts for how gateway and actor-host processes wire it.
 */
import type { Config } from "../../infra/config.ts";
import { InProcessTransport } from "./in-process.ts";
import { NatsTransport, type NatsTransportOptions, type PlacementHost } from "./nats.ts";
import type { Transport } from "./transport.ts";

export { InProcessTransport } from "./in-process.ts";
export { NatsTransport, defaultHostId, type NatsTransportOptions, type PlacementHost } from "./nats.ts";
export type { Transport, ServeHandler, EventHandler } from "./transport.ts";

export type TransportOptions = Omit<NatsTransportOptions, "servers" | "partitions">;

/**
 * NATS_URL set: a connected NatsTransport (joins placement only when something calls `serve`, so a gateway that
 * never serves stays a pure caller). Unset: a fresh InProcessTransport.
 */
export async function createTransport(
  config: Pick<Config, "NATS_URL" | "ACTOR_PARTITIONS">,
  opts: TransportOptions = {},
): Promise<InProcessTransport | NatsTransport> {
  if (!config.NATS_URL) return new InProcessTransport();
  return NatsTransport.connect({ ...opts, servers: config.NATS_URL, partitions: config.ACTOR_PARTITIONS });
}

/** Host processes call this before `host.start()`: partitions that move away deactivate their actors. */
export function attachHost(transport: Transport, host: PlacementHost): void {
  if (transport instanceof NatsTransport) transport.attachHost(host);
}
