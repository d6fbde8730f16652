/**
 * One place where failures become the spec's error envelope: ActorErrors by the code table
 * (actors/runtime/errors.ts), Elysia's validation errors as 400 `validation_error` with the failing field,
 * unknown routes as 404 `route_not_found`, malformed JSON as 400, a database outage (infra/db.ts
 * isDatabaseUnavailable) as 503 `service_unavailable`, and anything unexpected as a 500
 * `internal_error` without a stack trace (the trace goes to the log with the request id).
 */
import { Elysia } from "elysia";
import { ActorError, ERROR_TABLE, isInputDataError } from "../../actors/runtime/errors.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";
import { log } from "../../infra/log.ts";
import { errorBody } from "../envelope.ts";

/** The spec's 503 row: "overload or maintenance; retry after 30 seconds". */
const DB_RETRY_AFTER_SECONDS = 30;

interface ValidationLike {
  type?: string;
  all?: { path?: string; message?: string; summary?: string; value?: unknown }[];
  message?: string;
}

function validationDetails(err: ValidationLike): { message: string; details: Record<string, unknown> } {
  const all = Array.isArray(err.all) ? err.all : [];
  const first = all[0];
  const field = first?.path ? first.path.replace(/^\//, "").replace(/\//g, ".") : undefined;
  const what = first?.summary ?? first?.message ?? "invalid value";
  const location = err.type ?? "body";
  return {
    message: field ? `Invalid ${location} field '${field}': ${what}` : `Invalid ${location}: ${what}`,
    details: {
      location,
      ...(field ? { field } : {}),
      errors: all.slice(0, 10).map((e) => ({ field: (e.path ?? "").replace(/^\//, "").replace(/\//g, ".") || undefined, message: e.summary ?? e.message })),
    },
  };
}

export const errors = new Elysia({ name: "errors" }).onError({ as: "global" }, ({ code, error, set, request }) => {
  const headers = set.headers as Record<string, string>;
  headers["content-type"] = "application/json";
  if (error instanceof ActorError) {
    set.status = ERROR_TABLE[error.code].http;
    return errorBody(error.code, error.message, error.details);
  }
  if (isDatabaseUnavailable(error)) {
    // An outage, not a bug: the spec's 503 service_unavailable (retryable, "retry after 30 seconds"), no stack.
    log.warn("database unavailable", { requestId: headers["x-request-id"], path: new URL(request.url).pathname, error: (error as Error).message });
    set.status = 503;
    headers["retry-after"] = String(DB_RETRY_AFTER_SECONDS);
    return errorBody("service_unavailable", `The database is not answering; retry after ${DB_RETRY_AFTER_SECONDS} seconds.`, {
      retryAfterSeconds: DB_RETRY_AFTER_SECONDS,
      requestId: headers["x-request-id"],
    });
  }
  if (isInputDataError(error)) {
    set.status = 400;
    return errorBody("validation_error", "A value in the request is not acceptable (for example a NUL byte or an out-of-range number).");
  }
  switch (code) {
    case "VALIDATION": {
      const { message, details } = validationDetails(error as unknown as ValidationLike);
      set.status = 400;
      return errorBody("validation_error", message, details);
    }
    case "PARSE":
      set.status = 400;
      return errorBody("validation_error", "Request body is not valid JSON.", { location: "body" });
    case "NOT_FOUND":
      set.status = 404;
      return errorBody("route_not_found", `No route for ${request.method} ${new URL(request.url).pathname}.`);
    case "INVALID_COOKIE_SIGNATURE":
      set.status = 401;
      return errorBody("unauthorized", "Invalid session cookie.");
    default: {
      const status = (error as { status?: number })?.status;
      if (typeof status === "number" && status >= 400 && status < 500) {
        set.status = status;
        return errorBody(status === 413 ? "payload_too_large" : "validation_error", (error as Error).message || "Bad request.");
      }
      log.error("unhandled error", { requestId: headers["x-request-id"], path: new URL(request.url).pathname, error: error as Error, stack: (error as Error)?.stack });
      set.status = 500;
      return errorBody("internal_error", "Internal server error.", { requestId: headers["x-request-id"] });
    }
  }
});
