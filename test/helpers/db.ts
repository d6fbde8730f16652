/**
 * Every test file gets its own fresh database, so files can run in any order and in parallel processes.
 * The server comes from TEST_PG_URL, else the local PostgreSQL at 127.0.0.1:5432 (CI and dev machines here),
 * else an embedded Postgres started once per test process (a fresh machine with nothing installed).
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, connect, startEmbeddedPostgres, type Sql } from "../../infra/db.ts";
import { seedDemo } from "../../infra/seed/demo.ts";

let adminUrl: Promise<string> | undefined;

async function reachable(url: string): Promise<boolean> {
  const sql = connect(url, 1);
  try {
    await Promise.race([sql`SELECT 1`, Bun.sleep(2000).then(() => Promise.reject(new Error("timeout")))]);
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export function serverUrl(): Promise<string> {
  adminUrl ??= (async () => {
    const candidates = [process.env.TEST_PG_URL, "postgres://postgres@127.0.0.1:5432/postgres"].filter(Boolean) as string[];
    for (const url of candidates) if (await reachable(url)) return url;
    const dir = await mkdtemp(join(tmpdir(), "acs-test-pg-"));
    const pg = await startEmbeddedPostgres(join(dir, "pg"));
    process.once("exit", () => void pg.stop());
    return pg.url;
  })();
  return adminUrl;
}

export interface TestDatabase {
  url: string;
  name: string;
  sql: Sql;
  drop(): Promise<void>;
}

/**
 * A migrated database holding the demo seed (the default admin and merchant credentials), copied by
 * `createTestDatabase({ seeded: true })`: a copy takes ~0.3 s where migrating and seeding take ~2 s (argon2id
 * hashes, thousands of rows), and most test files boot a seeded server. Each test process makes its own and makes a
 * new one every TEMPLATE_MAX_AGE_MS, since the seed's dates are relative to when it ran; copies are still one fresh
 * database per file. Templates left by ended processes are dropped once older than TEMPLATE_ORPHAN_MS.
 */
const TEMPLATE_MAX_AGE_MS = 2 * 60_000;
const TEMPLATE_ORPHAN_MS = 15 * 60_000;
let template: { at: number; name: Promise<string> } | undefined;

/**
 * A migrated database without data, copied by `createTestDatabase()` (and by the seeded template): a copy takes
 * ~0.3 s where applying every migration takes 1.5-3.5 s on the 2-core machine. Nothing in it depends on when it was
 * made, so each test process makes one and keeps it; dropped once its process has ended (dropOldTemplates).
 */
let migrated: Promise<string> | undefined;

function migratedTemplate(): Promise<string> {
  const made = (migrated ??= (async () => {
    const db = await createTestDatabase({ name: `t_mtmpl_${Date.now()}_${process.pid}`, template: false });
    await db.sql.end({ timeout: 2 }).catch(() => {});
    await dropOldTemplates(Date.now());
    return db.name;
  })());
  made.catch(() => {
    if (migrated === made) migrated = undefined;
  });
  return made;
}

function seededTemplate(): Promise<string> {
  if (template && Date.now() - template.at < TEMPLATE_MAX_AGE_MS) return template.name;
  const at = Date.now();
  const name = (async () => {
    const db = await createTestDatabase({ name: `t_tmpl_${at}_${process.pid}` });
    try {
      await seedDemo(db.sql);
    } finally {
      await db.sql.end({ timeout: 2 }).catch(() => {});
    }
    await dropOldTemplates(at);
    return db.name;
  })();
  const entry = { at, name };
  template = entry;
  name.catch(() => {
    if (template === entry) template = undefined;
  });
  return name;
}

/** Whether a process of this machine with that id runs (a template's maker; another machine's reads as gone). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

/**
 * Templates no copy can still be starting from: this process's older ones, those of processes that have ended (each
 * test run leaves one), and any left for longer; and, in the background, the test databases of ended processes whose
 * DROP was cut short (drop()). A copy that loses the race to a drop is retried
 * (createTestDatabase).
 */
async function dropOldTemplates(now: number): Promise<void> {
  await withAdmin(async (admin) => {
    for (const { datname } of await admin<{ datname: string }[]>`SELECT datname FROM pg_database`) {
      // a test database whose DROP was cut short when its process ended (drop() below)
      const left = /^t_([0-9a-z]+)_p(\d+)_[0-9a-z]+$/.exec(datname);
      if (left) {
        if (Number(left[2]) !== process.pid && !running(Number(left[2])) && now - parseInt(left[1]!, 36) > TEMPLATE_MAX_AGE_MS) startDrop(datname);
        continue;
      }
      const m = /^t_(m?)tmpl_(\d+)_(\d+)$/.exec(datname);
      if (!m) continue;
      const age = now - Number(m[2]);
      const pid = Number(m[3]);
      // a migrated template (t_mtmpl_) is kept as long as its process runs
      const old = m[1] ? pid !== process.pid && age > TEMPLATE_MAX_AGE_MS && !running(pid) : pid === process.pid ? age > 2 * TEMPLATE_MAX_AGE_MS : (age > TEMPLATE_MAX_AGE_MS && !running(pid)) || age > TEMPLATE_ORPHAN_MS;
      if (old) {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
      }
    }
  });
}

/**
 * This process's connections to the server's maintenance database, for CREATE and DROP DATABASE: one pool instead of
 * a connection per statement (three a test file). A Postgres backend costs ~40 ms of the server's CPU to start on the
 * 2-core CI machine, and Postgres's part of a file's set-up is larger than Bun's (docs/performance.md "Test suite
 * time (session 18)"). Room for the drops under way and a copy; ended once unused for ADMIN_IDLE_MS (an unref'd
 * timer), so a script that boots a test server (bench/) still exits when it is done.
 */
const ADMIN_IDLE_MS = 2_000;
let adminPool: Sql | undefined;
let adminUsers = 0;
let adminIdle: ReturnType<typeof setTimeout> | undefined;

async function withAdmin<T>(use: (admin: Sql) => Promise<T>): Promise<T> {
  adminUsers++;
  clearTimeout(adminIdle);
  try {
    const admin = (adminPool ??= connect(await serverUrl(), MAX_DROPPING + 2));
    return await use(admin);
  } finally {
    if (--adminUsers === 0) {
      const pool = adminPool;
      adminIdle = setTimeout(() => {
        if (adminUsers > 0 || adminPool !== pool) return;
        adminPool = undefined;
        void pool?.end({ timeout: 1 }).catch(() => {});
      }, ADMIN_IDLE_MS);
      adminIdle.unref?.();
    }
  }
}

/**
 * CREATE DATABASE, from `template` when given. Postgres refuses a copy while any other session is connected to the
 * template (55006, after waiting 5 s for it to leave); the template's own pool has ended by then, but a backend may
 * still be on its way out on a loaded machine, so that refusal is tried again a few times.
 */
async function createDatabase(admin: Sql, name: string, template: string | undefined): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
      return;
    } catch (err) {
      if (!template || (err as { code?: string }).code !== "55006" || attempt >= 4) throw err;
      await Bun.sleep(250 * attempt);
    }
  }
}

/**
 * Creates an empty database (migrated unless `migrate: false`: a copy of this process's migrated template unless
 * `template: false`), or with `seeded` a copy of a migrated database holding the demo seed. Call `drop()` in afterAll.
 */
export async function createTestDatabase(opts: { migrate?: boolean; poolSize?: number; seeded?: boolean; name?: string; template?: boolean } = {}): Promise<TestDatabase> {
  const base = await serverUrl();
  const templateOf = (): Promise<string> | undefined => (opts.seeded ? seededTemplate() : opts.migrate !== false && opts.template !== false ? migratedTemplate() : undefined);
  let from = await templateOf();
  const name = opts.name ?? `t_${Date.now().toString(36)}_p${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  live.add(name);
  startDrop(undefined); // earlier files' databases whose DROP was cut short
  try {
    await withAdmin((admin) => createDatabase(admin, name, from));
  } catch (err) {
    if (!from || (err as { code?: string }).code !== "3D000") throw err;
    // the template was dropped meanwhile (another process took it for an ended one's): make a new one
    if (opts.seeded) template = undefined;
    else migrated = undefined;
    from = await templateOf();
    await withAdmin((admin) => createDatabase(admin, name, from));
  }
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, opts.poolSize ?? 10);
  if (opts.migrate !== false && !from) await applyMigrations(sql);
  return {
    url,
    name,
    sql,
    async drop() {
      await sql.end({ timeout: 2 }).catch(() => {});
      live.delete(name);
      startDrop(name);
      while (dropping.size > MAX_DROPPING) await Promise.race(dropping);
    },
  };
}

/**
 * DROP DATABASE ... WITH (FORCE) waits for the backends it ends and removes the files: 0.3-3 s per file on the 2-core
 * machine after a server has stopped, which the worker would otherwise spend idle in the file's afterAll. `drop()`
 * returns once the pool has ended and the DROP is sent, and the DROP finishes while the next file starts; at most
 * MAX_DROPPING are under way (drop() waits for one to end past that). A database whose DROP an ending test process
 * cut short is named with that process's id (t_<time>_p<pid>_<random>) and dropped by a later run (dropOldTemplates).
 */
const MAX_DROPPING = 3;
const dropping = new Set<Promise<void>>();
/** This module's databases not dropped yet. */
const live = new Set<string>();

/**
 * DROPs `name`; without one, this process's test databases no live module holds (files run one at a time in a
 * process, so they are earlier files'): under --isolate a file's pending DROP is cut short when its global is torn
 * down, so the next file's createTestDatabase sends it again, while that file runs.
 */
function startDrop(name: string | undefined): void {
  const dropped = (async () => {
    try {
      await withAdmin(async (a) => {
        const names = name
          ? [name]
          : (await a<{ datname: string }[]>`SELECT datname FROM pg_database WHERE datname LIKE ${`t\_%\_p${process.pid}\_%`}`).map((r) => r.datname).filter((n) => !live.has(n));
        for (const n of names) await a.unsafe(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`).catch(() => {});
      });
    } catch {
      /* the next drop() tries again; a later run drops what is left (dropOldTemplates) */
    }
  })();
  dropping.add(dropped);
  void dropped.finally(() => dropping.delete(dropped));
}
