/**
 * The gateway: cross-cutting plugins first (request id, transparency headers, errors, metrics), then every
 * feature module, then the OpenAPI document and its UI. No business rule lives here.
 */
import { Elysia } from "elysia";
import { compression } from "./plugins/compression.ts";
import { edge } from "./plugins/edge.ts";
import { errors } from "./plugins/errors.ts";
import { jsonDepth } from "./plugins/json-depth.ts";
import { metrics } from "./plugins/metrics.ts";
import { rateLimit } from "./plugins/rate-limit.ts";
import { strictBodyNumbers, useStrictNumericFormats } from "./plugins/json-numbers.ts";
import { useCompiledFormats } from "./plugins/schema-formats.ts";
import { gatewayModules, type GatewayModule } from "./rest/index.ts";
import { nativeHealthRoute } from "./rest/health.ts";
import { openapiDocument } from "./openapi/complete.ts";
import type { Services } from "./services.ts";

// after the openapi import (gateway/openapi/complete.ts), which replaced the uuid format check with one that builds a zod schema per call
useCompiledFormats();
// query and path numbers in decimal notation only (json-numbers.ts)
useStrictNumericFormats();

export const OPENAPI_DESCRIPTION = [
  "Commerce API for AI agents: search a multi-merchant catalog, compare products, read signed merchant trust",
  "data, build carts and pay. Every `/agent/*` route needs `X-Agent-Api-Key: agnt_…`.",
  "",
  "Errors use the envelope `{success:false, error, code, details}`; unlike the spec's minimum, `code` is",
  "present on every error of this implementation (see /docs/errors).",
  "",
  "One answer comes from the HTTP server, not from this API: a request whose head (request line and headers) is over",
  "16 KiB, e.g. a URL of more than about 16,000 characters, is refused with 431 Request Header Fields Too Large, an",
  "empty body and no X-Request-Id (docs/operations.md). Long input belongs in a JSON body.",
  "",
  "`GET /metrics` (Prometheus text, not listed below) is the operators' endpoint: with METRICS_TOKEN set it needs",
  "`Authorization: Bearer <METRICS_TOKEN>` (401 otherwise; refusals count against the address's public bucket); a",
  "production gateway without the token does not serve it (404); elsewhere it is open (docs/operations.md, Metrics).",
].join("\n");

export function createApp(svc: Services, extraModules: GatewayModule[] = []) {
  // normalize "typebox": Elysia's default (exactMirror) turns a string, number, array or null sent where an object
  // is expected into {} and answers 200; TypeBox cleaning refuses the wrong type (400) and still drops unknown
  // properties. It applies to every module mounted below.
  let app = new Elysia({
    name: "gateway",
    normalize: "typebox",
    // health probes as native Bun routes, ahead of the plugin pipeline (gateway/rest/health.ts)
    serve: {
      // Bun's development mode (Elysia turns it on unless NODE_ENV=production) adds per-request work for error
      // pages we never show: every error here is our own envelope.
      development: false,
      routes: {
        "/api/v1/health": { GET: nativeHealthRoute(svc, "/api/v1/health") },
        "/health": { GET: nativeHealthRoute(svc, "/health") },
      },
    },
  })
    .use(edge)
    .use(errors)
    .use(metrics)
    // large JSON answers compressed by Accept-Encoding (a global mapResponse hook: every module's routes below)
    .use(compression)
    .use(rateLimit(svc))
    // global transform hook: must come before every module so it runs ahead of each route's body validation
    .use(jsonDepth)
    // the generated document, completed with every answer and error code (gateway/openapi/)
    .use(
      openapiDocument({
        path: "/api/docs",
        openapiVersion: "3.1.0",
        specPath: "/api/v1/openapi.json",
        documentation: {
          openapi: "3.1.0",
          info: { title: "Agent Commerce Service", version: "1.2.0", description: OPENAPI_DESCRIPTION },
          components: {
            securitySchemes: {
              agentApiKey: { type: "apiKey", in: "header", name: "X-Agent-Api-Key" },
              bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
            },
          },
        },
        exclude: { paths: ["/metrics", "/health"] },
      }),
    ) as unknown as Elysia;
  for (const mod of [...gatewayModules, ...extraModules]) app = app.use(mod(svc)) as unknown as Elysia;
  // a JSON body's numbers are JSON numbers: Elysia's t.Integer/t.Numeric also take numeric strings (meant for query
  // strings); every route's body schema is rewritten once, here, before any request builds its validator
  strictBodyNumbers(app);
  return app;
}
