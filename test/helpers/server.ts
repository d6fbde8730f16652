/**
 * Boots the real service in this process (role `start`: gateway + every actor over the in-process bus) on a
 * free port against a fresh database, so integration tests talk HTTP to exactly what `bun run start` runs.
 */
import { afterAll, beforeAll } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boot, type BootOptions, type Running } from "../../gateway/boot.ts";
import type { Config } from "../../infra/config.ts";
import { login } from "./agents.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";

/** Like RequestInit, but `body` may be any JSON value (serialised for you). */
export type JsonInit = Omit<RequestInit, "body"> & { body?: unknown };

export interface TestServer {
  url: string;
  running: Running;
  db: TestDatabase;
  /** fetch relative to the server: `api("/api/v1/health")`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** JSON helper: returns status, headers and parsed body. */
  json<T = any>(path: string, init?: JsonInit): Promise<{ status: number; headers: Headers; body: T }>;
  stop(): Promise<void>;
}

export interface ServerOptions {
  config?: Partial<Config>;
  seed?: boolean;
  boot?: Omit<BootOptions, "config">;
}

export async function startServer(opts: ServerOptions = {}): Promise<TestServer> {
  // the demo seed with the default credentials comes copied from a template (test/helpers/db.ts); boot then finds the
  // database migrated and seeded, as after any restart
  const seeded = (opts.config?.SEED_DEMO ?? opts.seed ?? true) && opts.config?.ADMIN_EMAIL === undefined && opts.config?.ADMIN_PASSWORD === undefined;
  const db = await createTestDatabase(seeded ? { seeded: true } : { migrate: false });
  const dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  const running = await bootService({ databaseUrl: db.url, dataDir, config: { SEED_DEMO: opts.seed ?? true, ...opts.config }, boot: opts.boot });
  return serverHandle(running, db, async () => {
    await running.stop();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  });
}

/**
 * The service as startServer boots it (role `start`: every actor in this process; a free port; the test log level)
 * on a database and data directory the caller owns: for a test that restarts it on the same database with other
 * settings, boots it behind a proxy to its database, or must see its boot fail. `config` is laid over those settings
 * (whether to seed is the caller's to say), `boot` over the boot options (reminders polled every 200 ms).
 */
export function bootService(opts: { databaseUrl: string; dataDir: string; config?: Partial<Config>; boot?: Omit<BootOptions, "config"> }): Promise<Running> {
  return boot({
    role: "start",
    env: {},
    reminderPollMs: 200,
    ...opts.boot,
    config: {
      DATABASE_URL: opts.databaseUrl,
      HOST: "127.0.0.1",
      PORT: 0,
      DATA_DIR: opts.dataDir,
      LOG_LEVEL: (process.env.TEST_LOG_LEVEL as Config["LOG_LEVEL"]) ?? "error",
      NODE_ENV: "test",
      ...opts.config,
    },
  });
}

/**
 * The TestServer interface over a service a test booted itself (e.g. behind a proxy to its database): `stop` is
 * what the test wants it to be (by default nothing: the test stops what it started).
 */
export function serverHandle(running: Running, db: TestDatabase, stop: () => Promise<void> = async () => {}): TestServer {
  const url = running.url;
  const doFetch = (path: string, init?: RequestInit) => fetch(url + path, init);
  return {
    url,
    running,
    db,
    fetch: doFetch,
    async json(path, init = {}) {
      const headers = new Headers(init.headers);
      let body: BodyInit | undefined = init.body as BodyInit | undefined;
      if (init.body !== undefined && typeof init.body !== "string") {
        body = JSON.stringify(init.body);
        if (!headers.has("content-type")) headers.set("content-type", "application/json");
      }
      const res = await doFetch(path, { ...init, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, headers: res.headers, body: parsed as any };
    },
    stop,
  };
}

/** The server a whole test file shares (useServer), with the seeded admin's session token when asked for. */
export interface FileServer extends TestServer {
  /** The seeded admin's session token, logged in right after boot (`useServer({ admin: true })`). */
  readonly admin: string;
}

/**
 * One server for the test file, as most files set it up: startServer in a beforeAll (and, with `admin`, a log-in
 * as the seeded admin), stop in an afterAll. Call it at the top of the file, before the file's own hooks: bun runs
 * beforeAll hooks in the order they were registered, so the file's own set-up finds the server up. afterAll hooks
 * run in that order too, so the server stops before the file's own teardown: a file that must close something
 * against the live server first (an MCP client) keeps its own startServer.
 *
 * What it returns stands for the server from the first hook on (its fields and calls go to the server booted),
 * so the file writes `srv.json(...)`, `srv.db.sql` as with startServer; used before boot it throws.
 */
export function useServer(opts: ServerOptions & { admin?: boolean } = {}): FileServer {
  let booted: TestServer | undefined;
  let adminToken: string | undefined;
  const server = (): TestServer => {
    if (!booted) throw new Error("useServer: the server is not up yet (it boots in the file's first beforeAll)");
    return booted;
  };
  const handle: FileServer = {
    get url() {
      return server().url;
    },
    get running() {
      return server().running;
    },
    get db() {
      return server().db;
    },
    get admin() {
      if (adminToken === undefined) throw new Error("useServer: no admin token (pass `admin: true`)");
      return adminToken;
    },
    fetch: (path, init) => server().fetch(path, init),
    json: (path, init) => server().json(path, init),
    stop: () => server().stop(),
  };
  beforeAll(async () => {
    booted = await startServer(opts);
    if (opts.admin) adminToken = await login(handle);
  }, 120_000);
  afterAll(async () => {
    await booted?.stop();
  }, 60_000);
  return handle;
}
