/** The registry: every actor kind this service hosts, in one list. A host serves all of them. */
import type { AnyActorDefinition } from "./runtime/define-actor.ts";
import { agentActor } from "./agent/index.ts";
import { ipActor } from "./ip/index.ts";
import { cartActor } from "./cart/index.ts";
import { trustActor } from "./trust/index.ts";
import { webhookActor } from "./webhook/index.ts";
import { storeActor } from "./store/index.ts";
import { walletActor } from "./wallet/index.ts";

export const actorDefinitions: AnyActorDefinition[] = [agentActor, ipActor, storeActor, webhookActor, trustActor, cartActor, walletActor];
