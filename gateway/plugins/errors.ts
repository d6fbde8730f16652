/**
 * One place where failures become the spec's error envelope: ActorErrors by the code table
 * (actors/runtime/errors.ts), Elysia's validation errors as 400 `validation_error` with the failing field,
 * unknown routes as 404 `route_not_found`, malformed JSON as 400, a database outage (infra/db.ts
 * isDatabaseUnavailable) as 503 `service_unavailable`, and anything unexpected as a 500
 * `internal_error` without a stack trace (the trace goes to the log with the request id).
 */
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Elysia } from "elysia";
import { ActorError, ERROR_TABLE, isInputDataError } from "../../actors/runtime/errors.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";
import { log } from "../../infra/log.ts";
import { ECHO_MAX_CHARS, errorBody } from "../envelope.ts";

/** The spec's 503 row: "overload or maintenance; retry after 30 seconds". */
const DB_RETRY_AFTER_SECONDS = 30;

/** The parts of Elysia's ValidationError read here: its first TypeBox error, computed when it was thrown. */
interface ValidationLike {
  type?: string;
  valueError?: { type?: number; path?: string; message?: string; value?: unknown };
}


/** A short, bounded description of a caller's value: never its whole text (review H, finding 1). */
function preview(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > ECHO_MAX_CHARS ? `${v.slice(0, ECHO_MAX_CHARS)}…` : v);
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (v === null) return "null";
  if (typeof v === "object") return "an object";
  return String(v).slice(0, ECHO_MAX_CHARS);
}

/**
 * The 400 for a schema failure, from the first error only. Elysia's `message` (the whole body pretty-printed) and
 * `all` (re-validates the body and copies up to 64 errors with their values) are never read: for a wide body they
 * cost hundreds of ms and echoed megabytes back to the caller (review H: a 1 MiB login body answered with 2 MB).
 * The summaries follow Elysia's (mapValueError) for the common cases, with the value cut to ECHO_MAX_CHARS.
 */
function validationDetails(err: ValidationLike): { message: string; details: Record<string, unknown> } {
  const first = err.valueError;
  const path = typeof first?.path === "string" ? first.path : "";
  const field = path ? path.replace(/^\//, "").replace(/\//g, ".") : undefined;
  let what = typeof first?.message === "string" ? first.message.slice(0, ECHO_MAX_CHARS * 2) : "invalid value";
  switch (first?.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      what = field ? `Property '${field}' should not be provided` : "Value should not be provided";
      break;
    case ValueErrorType.ObjectRequiredProperty:
      what = field ? `Property '${field}' is missing` : "Value is missing";
      break;
    case ValueErrorType.String:
      what = `${what} but found: ${preview(first.value)}`;
      break;
  }
  const location = err.type ?? "body";
  return {
    message: field ? `Invalid ${location} field '${field}': ${what}` : `Invalid ${location}: ${what}`,
    details: { location, ...(field ? { field } : {}), errors: [{ field, message: what }] },
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
