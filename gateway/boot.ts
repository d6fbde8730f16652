/**
 * Starts a process in one of three roles from one code path:
 *  - start:   gateway + every actor kind, in-process bus, embedded Postgres unless DATABASE_URL (the default);
 *  - gateway: HTTP only, talks to actor hosts over NATS;
 *  - actors:  actor host only, no HTTP.
 * Tests boot the real thing through this function too (test/helpers/server.ts).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { actorDefinitions } from "../actors/index.ts";
import { ActorClient } from "../actors/runtime/client.ts";
import { systemClock, type Clock } from "../actors/runtime/clock.ts";
import { ActorHost } from "../actors/runtime/host.ts";
import { startRetention } from "../infra/retention.ts";
import { attachHost, createTransport, NatsTransport } from "../actors/transport/index.ts";
import type { Transport } from "../actors/transport/transport.ts";
import { bootHooks, type Role } from "../infra/boot-hooks.ts";
import { checkRoleConfig, loadConfig, normalizeSiteUrl, usesDefaultAdminCredentials, type Config } from "../infra/config.ts";
import { assertKekOpensDeployment } from "../infra/secrets.ts";
import { openDatabase, pingDatabase, type Database } from "../infra/db.ts";
import { log, setLogLevel } from "../infra/log.ts";
import { registerPartitionSource } from "../infra/metrics.ts";
import { primeLoginTiming } from "../infra/passwords.ts";
import { createApp } from "./app.ts";
import { SERVER_BODY_CAP } from "./plugins/body-limit.ts";
import { actorHostFetch, metricsAccess } from "./plugins/metrics.ts";
import type { Services } from "./services.ts";
import type { GatewayModule } from "./rest/index.ts";
import type { McpGateway } from "./mcp/server.ts";
import { openSessionDirectory, SESSION_DIRECTORY } from "./mcp/session-directory.ts";

/**
 * Bun closes a connection that sent or received nothing for this long, a pending request without a body included
 * (measured on Bun 1.4.5 in review R4-7; a request with a body is not cut). Bun.serve's default is 10 s, Elysia's
 * `listen` default 30 s. Above the longest wait a request can have before its first byte: a catalog ingest ask
 * (60 s), an x402 checkout (its cart ask of x402AskTimeoutMs, 35 s, after up to 5 s of /verify per store). At most
 * 255 (Bun's cap).
 */
export const SERVER_IDLE_TIMEOUT_S = 120;

/** How long a stopping gateway waits for in-flight requests before it closes their connections. */
export const SHUTDOWN_DRAIN_MS = 5_000;

export interface BootOptions {
  role?: Role;
  env?: Record<string, string | undefined>;
  /** Overrides applied after the environment (tests). */
  config?: Partial<Config>;
  clock?: Clock;
  reminderPollMs?: number;
  /** Extra gateway modules (tests mount probe routes through the real plugin chain). */
  extraModules?: GatewayModule[];
  /** The pool's query deadline (infra/db.ts QUERY_DEADLINE_MS unless set; tests shorten it). */
  queryDeadlineMs?: number;
  /** The HTTP server's idle timeout in seconds (SERVER_IDLE_TIMEOUT_S unless set; tests shorten it). */
  idleTimeoutS?: number;
}

export interface Running {
  role: Role;
  config: Config;
  url: string;
  port: number;
  services: Services;
  host?: ActorHost;
  transport: Transport;
  db: Database;
  stop(): Promise<void>;
}

async function makeTransport(config: Config, role: Role): Promise<Transport> {
  if (!config.NATS_URL && role !== "start") throw new Error(`role ${role} needs NATS_URL (the in-process bus only works inside one process)`);
  return createTransport(config);
}

/** The key-encryption key for secrets at rest: SECRET_KEY, else generated once into DATA_DIR (with a warning). */
async function loadSecretKey(config: Config): Promise<Uint8Array> {
  if (config.SECRET_KEY) return Buffer.from(config.SECRET_KEY, "hex");
  const file = join(config.DATA_DIR, "secret.key");
  try {
    return Buffer.from((await readFile(file, "utf8")).trim(), "hex");
  } catch {
    await mkdir(config.DATA_DIR, { recursive: true });
    const key = crypto.getRandomValues(new Uint8Array(32));
    await writeFile(file, Buffer.from(key).toString("hex"), { mode: 0o600 });
    log.warn("SECRET_KEY is not set: generated a key-encryption key in DATA_DIR; set SECRET_KEY in production", { file });
    return key;
  }
}

export async function boot(opts: BootOptions = {}): Promise<Running> {
  const role = opts.role ?? "start";
  const config = { ...loadConfig(opts.env ?? process.env), ...opts.config } as Config;
  config.SITE_URL = normalizeSiteUrl(config.SITE_URL ?? "");
  checkRoleConfig(config, role);
  setLogLevel(config.LOG_LEVEL);
  // only where they are used: the roles gateway and actors never seed, so the warning there said nothing (audit M-5)
  if (config.NODE_ENV === "production" && role === "start" && config.SEED_DEMO && usesDefaultAdminCredentials(config)) {
    log.warn("ADMIN_EMAIL/ADMIN_PASSWORD are the dev-only defaults; change them in production");
  }
  if (role !== "start" && !config.DATABASE_URL) throw new Error(`role ${role} needs DATABASE_URL`);

  const db = await openDatabase({ databaseUrl: config.DATABASE_URL || undefined, dataDir: config.DATA_DIR, queryDeadlineMs: opts.queryDeadlineMs });
  const clock = opts.clock ?? systemClock;
  const stops: (() => Promise<void>)[] = [];
  let transport: Transport | undefined;
  try {
    transport = await makeTransport(config, role);
    const client = new ActorClient(transport, { defaultTimeoutMs: config.ACTOR_ASK_TIMEOUT_MS });
    const secretKey = await loadSecretKey(config);
    await assertKekOpensDeployment(db.sql, secretKey);
    const services: Services = {
      config,
      actors: client,
      sql: db.sql,
      clock,
      log,
      siteUrl: config.SITE_URL || `http://${config.HOST}:${config.PORT}`,
      readiness: {},
      extras: new Map<string, unknown>([["secretKey", secretKey]]),
    };

    let host: ActorHost | undefined;
    if (role !== "gateway") {
      host = new ActorHost({
        transport,
        sql: db.sql,
        definitions: actorDefinitions,
        caller: client,
        clock,
        idleMs: config.ACTOR_IDLE_MS,
        reminderPollMs: opts.reminderPollMs,
      });
      attachHost(transport, host);
      await host.start();
      stops.push(() => host!.stop());
      stops.push(startRetention(db.sql, config, log, () => clock.now()));
    }

    // Gateways of one deployment share their MCP sessions through a KV bucket (gateway/mcp/session-directory.ts);
    // the embedded default keeps them in the gateway's memory. Opened and closed here only: its stop is pushed before
    // the MCP gateway's (below), so it runs after the gateway has closed its sessions.
    if (role !== "actors") {
      const directory = await openSessionDirectory(transport instanceof NatsTransport ? transport.nc : undefined);
      services.extras.set(SESSION_DIRECTORY, directory);
      stops.push(() => directory.close());
    }

    if (role === "start" && config.SEED_DEMO) {
      const seedPath = "../infra/seed/demo.ts";
      const seed = (await import(seedPath).catch(() => undefined)) as
        | { seedDemo(sql: Database["sql"], o: { adminEmail: string; adminPassword: string }): Promise<unknown> }
        | undefined;
      if (seed) await seed.seedDemo(db.sql, { adminEmail: config.ADMIN_EMAIL, adminPassword: config.ADMIN_PASSWORD });
    }

    for (const hook of bootHooks) {
      if (!hook.roles.includes(role)) continue;
      const undo = await hook.run({ role, services, transport, host });
      if (undo) stops.push(undo);
    }

    let url = "";
    let port = 0;
    if (role !== "actors") {
      // Start the dummy argon2id hash now so an unknown e-mail is not answered faster; not awaited (it costs a few
      // hundred ms): a login arriving earlier waits for the same promise.
      void primeLoginTiming().catch((err) => log.warn("could not prime login timing", { error: err as Error }));
      const app = createApp(services, opts.extraModules);
      // Bun's default cap is 128 MB; per-surface limits are gateway/plugins/body-limit.ts
      // reusePort: several gateway processes of one machine on one port (REUSE_PORT, role gateway only: checkRoleConfig)
      app.listen({ hostname: config.HOST, port: config.PORT, maxRequestBodySize: SERVER_BODY_CAP, idleTimeout: opts.idleTimeoutS ?? SERVER_IDLE_TIMEOUT_S, reusePort: config.REUSE_PORT });
      port = app.server!.port!;
      url = `http://${config.HOST}:${port}`;
      if (!config.SITE_URL) services.siteUrl = url;
      stops.push(async () => {
        // stop accepting, let in-flight requests finish, for at most SHUTDOWN_DRAIN_MS: a request that never ends (a
        // stream we did not close) must not keep the process, and the database it would need, up until SIGKILL
        const server = app.server;
        if (!server) return;
        const drained = await Promise.race([server.stop(false).then(() => true), Bun.sleep(SHUTDOWN_DRAIN_MS).then(() => false)]);
        if (!drained) {
          log.warn("in-flight requests outlived the shutdown drain; closing their connections", { drainMs: SHUTDOWN_DRAIN_MS });
          await server.stop(true);
        }
      });
      // Runs before the HTTP stop above (stops run in reverse): MCP sessions' GET streams and pending elicitations
      // are requests the drain would otherwise wait for (audit B F2).
      const mcp = services.extras.get("mcpGateway") as Pick<McpGateway, "close"> | undefined;
      if (mcp) stops.push(() => mcp.close());
      log.info("gateway listening", { url, role });
    } else {
      // an actor host has no API port, but operators still scrape it: /metrics, and /health (database and membership)
      const metricsServer = Bun.serve({
        hostname: config.HOST,
        port: config.METRICS_PORT,
        // /metrics under the API port's rule (METRICS_TOKEN), /health, else the service's 404 envelope
        fetch: actorHostFetch(config, {
          database: () => pingDatabase(db.sql),
          member: () => (transport instanceof NatsTransport ? transport.isMember() : true),
        }),
      });
      port = metricsServer.port ?? 0;
      url = `http://${config.HOST}:${port}`;
      stops.push(async () => {
        await metricsServer.stop(true);
      });
      // /metrics only where it is served (a production host without METRICS_TOKEN answers it 404; helper E, session 22)
      log.info("actor host started", {
        kinds: actorDefinitions.map((d) => d.kind),
        listener: url,
        ...(metricsAccess(config) === "off" ? { metrics: "not served (NODE_ENV=production without METRICS_TOKEN)" } : { metrics: `${url}/metrics` }),
      });
    }
    const partitions = transport as Transport & { ownedPartitions?: () => Record<string, number> };
    if (partitions.ownedPartitions) {
      const unregister = registerPartitionSource(() => partitions.ownedPartitions!());
      stops.push(async () => {
        unregister();
      });
    }

    const t = transport;
    let stopped = false;
    return {
      role,
      config,
      url,
      port,
      services,
      host,
      transport: t,
      db,
      async stop() {
        if (stopped) return;
        stopped = true;
        // reverse order: HTTP first (no new work), then hooks, then actors
        for (const s of stops.reverse()) await s().catch((err) => log.warn("shutdown step failed", { error: err as Error }));
        await t.close().catch(() => {});
        await db.close().catch(() => {});
      },
    };
  } catch (err) {
    for (const s of stops.reverse()) await s().catch(() => {});
    await transport?.close().catch(() => {});
    await db.close().catch(() => {});
    throw err;
  }
}
