/**
 * A pool given a Unix socket path (`connect(url, max, { socketPath })`, which openDatabase passes for the embedded
 * Postgres: startEmbeddedPostgres `socketPath`) connects over it, and a socket that is not there (the server down,
 * its socket file removed) is a connection failure that never reached the database, like ECONNREFUSED over TCP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, isDatabaseConnectionError, isDatabaseUnavailable, isNeverSent, startEmbeddedPostgres } from "../../infra/db.ts";

let dir = "";
let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-db-socket-"));
  await chmod(dir, 0o755); // as root, initdb runs as the postgres user
  pg = await startEmbeddedPostgres(join(dir, "pg"));
}, 60_000);

afterAll(async () => {
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
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
