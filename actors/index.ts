/** The registry: every actor kind this service hosts, in one list. A host serves all of them. */
import type { AnyActorDefinition } from "./runtime/define-actor.ts";

export const actorDefinitions: AnyActorDefinition[] = [];
