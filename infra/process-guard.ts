/**
 * Last line of defence for the process (installed by gateway/main.ts, not by tests that boot in-process): an
 * unhandled rejection or uncaught exception ends a Bun process. For an error of one of our database connections (a
 * connection refused or lost while postgres.js reconnects) that is the wrong answer: postgres.js reconnects per
 * connection, every request meanwhile gets 503, and nothing is half-done in memory, so the error is logged
 * (rate-limited, with its stack: it still means a query promise nobody handled) and the process keeps serving.
 *
 * Only errors that provably come from our database connections (`isDatabaseConnectionError`: by their origin, not by
 * their code) are survived. The same socket codes come from every fetch() to a webhook, processor or JWKS host, or
 * from any other host on the database's port (a socket error is ours only if it names our database's configured host
 * or an address that host resolved to, and its port; review R4-F5). A statement-level code (40001, 40P01, 55P03,
 * 57014, class 53 but 53300: disk full, out of memory) or the pool's QUERY_DEADLINE can only reach here from a query
 * of ours nobody awaited. Both are bugs whose effects we cannot know, so they are logged with their stack and the
 * process exits 1 as Bun would have, so a supervisor restarts it (review R2-F1).
 */
import { isDatabaseConnectionError } from "./db.ts";
import type { Logger } from "./log.ts";

export interface ProcessGuardOptions {
  log: Logger;
  exit?: (code: number) => void;
  /** At most one warning per this many ms for survived database errors (the rest are counted in the next one). */
  logEveryMs?: number;
  now?: () => number;
}

export interface ProcessGuard {
  /** Database connection errors that escaped every handler and were survived. */
  readonly survived: number;
  /** What the process does with an error nobody handled: "survived" (logged) or "fatal" (logged, exit 1). */
  handle(kind: "unhandledRejection" | "uncaughtException", err: unknown): "survived" | "fatal";
  /** Registers `handle` for both process events; returns the function that removes it. */
  install(): () => void;
}

export function createProcessGuard(opts: ProcessGuardOptions): ProcessGuard {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const logEveryMs = opts.logEveryMs ?? 30_000;
  const now = opts.now ?? Date.now;
  let survived = 0;
  let suppressed = 0;
  let lastLogAt = -Infinity;
  const handle: ProcessGuard["handle"] = (kind, err) => {
    if (isDatabaseConnectionError(err)) {
      survived++;
      if (now() - lastLogAt >= logEveryMs) {
        lastLogAt = now();
        opts.log.warn("database connection error escaped its caller; the process keeps serving", {
          kind,
          error: err as Error,
          code: (err as { code?: unknown }).code,
          // the stack is what finds the query promise nobody handled (postgres.js appends the query's origin)
          stack: (err as Error).stack,
          survived,
          suppressed,
        });
        suppressed = 0;
      } else {
        suppressed++;
      }
      return "survived";
    }
    opts.log.error(`${kind}: the process exits`, { error: err as Error, stack: (err as Error | null)?.stack });
    exit(1);
    return "fatal";
  };
  return {
    get survived() {
      return survived;
    },
    handle,
    install() {
      const onRejection = (err: unknown) => void handle("unhandledRejection", err);
      const onException = (err: unknown) => void handle("uncaughtException", err);
      process.on("unhandledRejection", onRejection);
      process.on("uncaughtException", onException);
      return () => {
        process.off("unhandledRejection", onRejection);
        process.off("uncaughtException", onException);
      };
    },
  };
}
