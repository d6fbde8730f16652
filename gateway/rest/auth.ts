/**
 * POST /api/v1/auth/login → a session JWT. Wrong credentials give the same 401 whether or not the email exists,
 * and take about as long (a hash is verified either way). Credential checks are stateless reads, so they run at
 * the edge rather than in an actor (docs/decisions.md). Attempts pass the log-in buckets shared with the OAuth
 * consent form and the dashboard (gateway/login.ts).
 */
import { Elysia, t } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { SESSION_AUDIENCE, SESSION_TTL_SECONDS, tokenService } from "../identity.ts";
import { passwordLogin } from "../login.ts";
import { clientIp } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import { strictJsonBody } from "./strict-body.ts";

/** The body, also the route's `strictJsonBody` (a key it does not have is 400 naming it, as on every write: audit W-7). */
const LoginBody = t.Object({ email: t.String({ minLength: 3, maxLength: 320, pattern: NO_NUL_PATTERN }), password: t.String({ minLength: 1, maxLength: 1024 }) });

export function authRoutes(svc: Services) {
  return new Elysia({ name: "auth-routes" }).post(
    "/api/v1/auth/login",
    async ({ body, request, server, set }) => {
      const headers = set.headers as Record<string, string | number>;
      const user = await passwordLogin(svc, {
        ip: clientIp(request, server),
        email: body.email,
        password: body.password,
        headers,
        // no Cookie: the known-device cookie is set and honoured by the browser forms only (review R5-2)
      });
      if (!user) throw fail("unauthorized", "Invalid email or password.");
      const tokens = await tokenService(svc);
      const token = await tokens.issueToken({
        sub: user.id,
        aud: SESSION_AUDIENCE,
        ttlSeconds: SESSION_TTL_SECONDS,
        extra: { email: user.email, role: user.role },
      });
      return ok({ token, expiresAt: new Date(svc.clock.now() + SESSION_TTL_SECONDS * 1000).toISOString() });
    },
    {
      ...strictJsonBody(LoginBody),
      response: { 200: SuccessEnvelope(t.Object({ token: t.String(), expiresAt: t.String({ format: "date-time" }) })), ...errorResponses(400, 401, 429, 503) },
      detail: {
        tags: ["accounts"],
        summary: "Log in and get a session JWT",
        description: "Wrong credentials: 401 unauthorized, the same answer and about the same time whether or not the e-mail exists. Besides the global per-IP bucket (500 per 15 min), attempts share the log-in buckets with the OAuth consent form and the dashboard: 30 per 15 min per address and 100 per 15 min per e-mail (a successful log-in does not count; an address that signed in to the account in the last 30 days passes a full per-e-mail bucket, within a second bucket of the same size per e-mail shared by all such addresses); past them 429 rate_limit_exceeded with Retry-After. 503 service_unavailable with Retry-After when too many passwords are being checked at once.",
      },
    },
  );
}
