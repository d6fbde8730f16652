/**
 * The actor kinds every actor host of the service serves (actors/index.ts `actorDefinitions`;
 * test/distributed/cluster-status-no-host.test.ts keeps the two equal), in a module of its own so the operator CLI and
 * the health route need not load the actors' code (or the NATS client) to know them. With no live host no heartbeat
 * names them: counting unowned partitions over the heartbeats' kinds only showed none at all (audit M-3).
 */
export const ACTOR_KINDS: readonly string[] = ["agent", "ip", "store", "webhook", "trust", "cart", "wallet"];
