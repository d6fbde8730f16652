/**
 * The embedded Postgres also listens on a Unix-domain socket whose path startEmbeddedPostgres returns
 * (`socketPath`): a local client's statements cost both ends less CPU over it than over loopback TCP (session 9,
 * docs/performance.md "Checkout"). The TCP URL keeps working for every other client.
 *
 * A pool given that path (`connect(url, max, { socketPath })`, which openDatabase passes) connects over it, and a
 * socket that is not there (the server down, its socket file removed) is a connection failure that never reached
 * the database, like ECONNREFUSED over TCP. (One file, so one embedded Postgres serves both parts.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { connect, isDatabaseConnectionError, isDatabaseUnavailable, isNeverSent, startEmbeddedPostgres } from "../../infra/db.ts";

let dir = "";
let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-embedded-socket-"));
  await chmod(dir, 0o755); // as root, initdb runs as the postgres user
  pg = await startEmbeddedPostgres(join(dir, "pg"));
}, 60_000);

afterAll(async () => {
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("the embedded Postgres's Unix socket", () => {
  test("startEmbeddedPostgres names a socket path in /tmp (the server's default directory), with the server's port", () => {
    const port = new URL(pg.url).port;
    expect(pg.socketPath).toBe(`/tmp/.s.PGSQL.${port}`);
  });

  test("the socket is in /tmp even when the caller's TMPDIR is elsewhere (the server may run as another user)", async () => {
    // initialised first with the usual TMPDIR (initdb reads its password file from there), then started again with
    // a private one: a 0700 directory of this user, where a server running as `postgres` could create nothing
    await (await startEmbeddedPostgres(join(dir, "pg2"))).stop();
    const saved = process.env.TMPDIR;
    const other = await mkdtemp(join(tmpdir(), "acs-private-tmp-"));
    process.env.TMPDIR = other;
    const second = await startEmbeddedPostgres(join(dir, "pg2")).finally(() => {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    });
    try {
      expect(second.socketPath).toBe(`/tmp/.s.PGSQL.${new URL(second.url).port}`);
      const sql = postgres(second.url, { path: second.socketPath, max: 1, onnotice: () => {} });
      try {
        expect((await sql<{ addr: string | null }[]>`SELECT inet_server_addr()::text AS addr`)[0]).toEqual({ addr: null });
      } finally {
        await sql.end({ timeout: 1 });
      }
    } finally {
      await second.stop();
      await rm(other, { recursive: true, force: true });
    }
  }, 60_000);

  test("a client given the socket path reaches the server over the socket, with the URL's credentials", async () => {
    const sql = postgres(pg.url, { path: pg.socketPath, max: 1, onnotice: () => {} });
    try {
      // inet_server_addr() is NULL on a Unix-socket connection and the address on a TCP one
      const [row] = await sql<{ addr: string | null; db: string }[]>`SELECT inet_server_addr()::text AS addr, current_database() AS db`;
      expect(row).toEqual({ addr: null, db: "postgres" });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  test("the TCP URL still reaches the same server", async () => {
    const sql = connect(pg.url, 1);
    try {
      const [row] = await sql<{ addr: string | null }[]>`SELECT host(inet_server_addr()) AS addr`;
      expect(row).toEqual({ addr: "127.0.0.1" });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe("a pool over a Unix socket", () => {
  test("connect() with socketPath reaches the server over its socket", async () => {
    const sql = connect(pg.url, 2, { socketPath: pg.socketPath });
    try {
      const [row] = await sql<{ addr: string | null }[]>`SELECT inet_server_addr()::text AS addr`;
      expect(row).toEqual({ addr: null });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  test("a socket path with nothing behind it is a connection failure that never reached the database", async () => {
    const sql = connect(pg.url, 1, { socketPath: join(dir, ".s.PGSQL.1") });
    try {
      const err = await sql`SELECT 1`.then(
        () => null,
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).toBe("ENOENT");
      expect(isDatabaseConnectionError(err)).toBe(true);
      expect(isDatabaseUnavailable(err)).toBe(true);
      expect(isNeverSent(err)).toBe(true);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

test("a missing file read anywhere else is a fault, not a database outage (final read RG-2)", async () => {
  const err = await Bun.file(join(dir, "no-such-file")).text().then(
    () => null,
    (e: unknown) => e,
  );
  expect((err as { code?: string }).code).toBe("ENOENT");
  expect(isDatabaseUnavailable(err)).toBe(false);
  expect(isNeverSent(err)).toBe(false);
  expect(isDatabaseConnectionError(err)).toBe(false);
});
