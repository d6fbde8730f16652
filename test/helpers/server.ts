/**
 * Boots the real service in this process (role `start`: gateway + every actor over the in-process bus) on a
 * free port against a fresh database, so integration tests talk HTTP to exactly what `bun run start` runs.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boot, type BootOptions, type Running } from "../../gateway/boot.ts";
import type { Config } from "../../infra/config.ts";
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

export async function startServer(opts: { config?: Partial<Config>; seed?: boolean; boot?: Omit<BootOptions, "config"> } = {}): Promise<TestServer> {
  // the demo seed with the default credentials comes copied from a template (test/helpers/db.ts); boot then finds the
  // database migrated and seeded, as after any restart
  const seeded = (opts.config?.SEED_DEMO ?? opts.seed ?? true) && opts.config?.ADMIN_EMAIL === undefined && opts.config?.ADMIN_PASSWORD === undefined;
  const db = await createTestDatabase(seeded ? { seeded: true } : { migrate: false });
  const dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  const running = await boot({
    role: "start",
    env: {},
    reminderPollMs: 200,
    ...opts.boot,
    config: {
      DATABASE_URL: db.url,
      HOST: "127.0.0.1",
      PORT: 0,
      DATA_DIR: dataDir,
      SEED_DEMO: opts.seed ?? true,
      LOG_LEVEL: (process.env.TEST_LOG_LEVEL as Config["LOG_LEVEL"]) ?? "error",
      NODE_ENV: "test",
      ...opts.config,
    },
  });
  return serverHandle(running, db, async () => {
    await running.stop();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
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
