/**
 * The dashboard's answer to a form body over its limit (plugins/body-limit.ts, 20 MiB under /dashboard): a person
 * in a browser gets the dashboard's error page with 413, never the API's JSON envelope nor a CSRF refusal. Two
 * places refuse it: the edge hook, for a declared Content-Length, before any route runs (the error plugin hands it
 * here, `dashboardTooLarge`), and a form read that the counting stream cut, for a chunked body (index.ts).
 */
import { ActorError } from "../../actors/runtime/errors.ts";
import type { Html } from "./html.ts";
import { errorPage } from "./pages/basic.ts";
import type { DashboardSession } from "./session.ts";

type Headers = Record<string, string | number>;

/** The headers of every dashboard HTML page. */
export function htmlHeaders(headers: Headers): void {
  headers["content-type"] = "text/html; charset=utf-8";
  headers["cache-control"] = "no-store";
  headers["x-frame-options"] = "DENY";
  headers["x-content-type-options"] = "nosniff";
  headers["referrer-policy"] = "same-origin";
  headers["content-security-policy"] =
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
  // A person's browser, not an agent: the agent transparency headers do not describe these responses.
  delete headers["x-agent-commerce"];
  delete headers["x-initiated-by"];
  delete headers["x-ai-act-transparency"];
}

/** "20 MB" for a limit in bytes, as the upload form's hint says it. */
export const megabytes = (bytes: number): string => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;

export const isTooLarge = (err: unknown): err is ActorError => err instanceof ActorError && err.code === "payload_too_large";

/** The 413 page naming the limit (`details.limitBytes` of the refusal). */
export function tooLargePage(session: DashboardSession | null, err: ActorError): Html {
  const limit = (err.details as { limitBytes?: unknown } | undefined)?.limitBytes;
  const size = typeof limit === "number" ? ` (${megabytes(limit)})` : "";
  return errorPage(
    session,
    413,
    "Upload too large",
    `The form is larger than the dashboard accepts${size}; nothing was changed. Split the file, or import it with the CLI (bun run cli import).`,
  );
}

/**
 * For the error plugin: the 413 page when a dashboard path's body was refused before any route ran, else
 * undefined (the plugin's own answer stands). The rest of the body is never read, so the connection ends.
 */
export function dashboardTooLarge(pathname: string, error: unknown, set: { status?: number | string; headers: Headers }): string | undefined {
  if (!isTooLarge(error) || !(pathname === "/dashboard" || pathname.startsWith("/dashboard/"))) return undefined;
  htmlHeaders(set.headers);
  set.headers.connection = "close";
  set.status = 413;
  return tooLargePage(null, error).value;
}
