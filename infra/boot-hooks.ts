/**
 * Start-up work of feature modules (load the search index, load signing keys, subscribe the indexer…), in
 * order. A hook runs in the roles it names and may return a function that undoes it on shutdown.
 */
import type { ActorHost } from "../actors/runtime/host.ts";
import type { Transport } from "../actors/transport/transport.ts";
import type { Services } from "../gateway/services.ts";
import { trustBootHook } from "../actors/trust/index.ts";
import { webhookBootHook } from "../actors/webhook/dispatcher.ts";
import { searchBootHook } from "../search/indexer.ts";
import { x402BootHook } from "../actors/payments/x402-rail.ts";

export type Role = "start" | "gateway" | "actors";

export interface BootContext {
  role: Role;
  services: Services;
  transport: Transport;
  host?: ActorHost;
}

export interface BootHook {
  name: string;
  roles: Role[];
  run(ctx: BootContext): Promise<void | (() => Promise<void>)>;
}

// trust first: it scores the stores that have no computed score yet, so the search index loads computed numbers.
export const bootHooks: BootHook[] = [trustBootHook, searchBootHook, webhookBootHook, x402BootHook];
