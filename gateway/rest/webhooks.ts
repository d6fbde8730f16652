/**
 * Webhook endpoints of a store (Bearer JWT of the store's owner; operators may act on any store, anybody else
 * gets 404 store_not_found). The signing secret is generated and sealed here, so its plaintext is returned once
 * by POST (and by rotate-secret) and never travels on the bus nor lands in an actor's reply log.
 * URLs are SSRF-vetted at registration (https only and public addresses only in production) and again at every
 * delivery attempt, after DNS resolution (actors/webhook/deliver.ts). Docs: docs/webhooks.md.
 */
import { strictJsonBody } from "./strict-body.ts";
import { Elysia, t } from "elysia";
import { deliveryView, DELIVERY_COLUMNS, ENDPOINT_COLUMNS, endpointView, webhookActor } from "../../actors/webhook/index.ts";
import { sealWebhookSecret, SECRET_ROTATION_OVERLAP_MS, webhookSecretsKey } from "../../actors/webhook/deliver.ts";
import { EXTRAS_RESOLVER, privateUrlsAllowed } from "../../actors/webhook/dispatcher.ts";
import { WEBHOOK_EVENT_KINDS } from "../../actors/webhook/messages.ts";
import { generateWebhookSecret } from "../../actors/webhook/signature.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { assertPublicUrl, type Resolver } from "../../infra/ssrf.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { userAuth, type UserPrincipal } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { noBody, optionalObjectBody } from "./optional-body.ts";
import { storeSlugSchema } from "../../actors/store/slug.ts";

const BASE = "/api/v1/merchant/stores/:slug/webhooks";

const EventKind = t.Union(WEBHOOK_EVENT_KINDS.map((k) => t.Literal(k)));

const EndpointOut = t.Object({
  id: t.String({ format: "uuid" }),
  storeSlug: t.String(),
  url: t.String(),
  events: t.Array(t.String()),
  createdAt: t.String({ format: "date-time" }),
  previousSecretExpiresAt: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "Until then the previous secret still signs (a second v1 in X-Webhook-Signature).",
  }),
  breaker: t.String({ description: "Circuit breaker of the endpoint: closed, open or half_open." }),
  enabled: t.Boolean({
    description:
      "False once disabled (after 5 days without a 2xx answer since the first failure of the streak, or by the merchant): " +
      "no delivery is created for new events and nothing is sent until POST …/enable. Its open deliveries were dead-lettered and can be redelivered once enabled.",
  }),
  disabledAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "When it was disabled; null while enabled." }),
  disabledReason: t.Union([t.String(), t.Null()], { description: "Why it was disabled (the failure streak and its last error, or the merchant); null while enabled." }),
  failingSince: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "First failed attempt since the last 2xx; a failed attempt 5 days or more after it disables the endpoint. Null when the last outcome was a 2xx.",
  }),
});
const WithSecret = t.Composite([EndpointOut, t.Object({ secret: t.String({ description: "whsec_… signing secret, shown once." }) })]);

const DeliveryOut = t.Object({
  id: t.String({ format: "uuid" }),
  eventId: t.String({ format: "uuid", description: "Sent as X-Webhook-Id; stable across retries and redeliveries." }),
  event: t.String(),
  status: t.String({ description: "pending, failed (retry scheduled), delivered or dead (dead letter)." }),
  attempts: t.Integer(),
  nextAttemptAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  lastAttemptAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  lastStatusCode: t.Union([t.Integer(), t.Null()]),
  lastError: t.Union([t.String(), t.Null()]),
  deliveredAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  createdAt: t.String({ format: "date-time" }),
});

/** The stores table's own slug format: anything else names no store and must not reach SQL (a NUL is a 500 there). */
const SlugParams = t.Object({ slug: storeSlugSchema() });

const EndpointParams = t.Object({ slug: storeSlugSchema(), id: t.String({ format: "uuid" }) });
const DeliveryParams = t.Object({ slug: storeSlugSchema(), id: t.String({ format: "uuid" }), deliveryId: t.String({ format: "uuid" }) });
const security = [{ bearer: [] }];

async function assertStoreAccess(svc: Services, user: UserPrincipal, slug: string): Promise<void> {
  const rows = await svc.sql<{ owner_user_id: string | null }[]>`SELECT owner_user_id FROM stores WHERE slug = ${slug}`;
  const store = rows[0];
  if (!store || (user.role !== "operator" && store.owner_user_id !== user.id)) {
    throw fail("store_not_found", "Store does not exist or is not yours.");
  }
}

/**
 * The store's live endpoint named by `id`, as its row spells the id (lower case). Audit M-5: the path's UUID may come
 * in any letter case (`format: "uuid"` and the uuid column both accept it), but the id is also the actor's id and the
 * sealed secret's AAD, which compare as text: an upper-case id sealed a rotated secret no delivery could open and
 * addressed a second `webhook/<ID>` activation beside the endpoint's own. Every operation below takes the id from
 * here, so each caller (REST routes, dashboard) gets the one canonical spelling without normalising it itself.
 */
async function endpointIdOf(svc: Services, slug: string, id: string): Promise<string> {
  const rows = await svc.sql<{ id: string }[]>`
    SELECT id FROM webhook_endpoints WHERE id = ${id} AND store_slug = ${slug} AND deleted_at IS NULL`;
  if (!rows[0]) throw fail("not_found", "No such webhook endpoint.");
  return rows[0].id;
}

function secretsKey(svc: Services): Uint8Array {
  return webhookSecretsKey(svc.extras.get("secretKey") as Uint8Array);
}


// ---------------------------------------------------------------------------------------------------------------
// The operations behind the routes, shared with the merchant dashboard (gateway/dashboard) so both take the same
// path: ownership check, SSRF vetting, secret generation and sealing, one webhook actor message.

export type WebhookEndpointView = ReturnType<typeof endpointView>;
export type WebhookDeliveryView = ReturnType<typeof deliveryView>;

export async function createWebhookEndpoint(
  svc: Services,
  user: UserPrincipal,
  slug: string,
  body: { url: string; events: readonly (typeof WEBHOOK_EVENT_KINDS)[number][] },
): Promise<WebhookEndpointView & { secret: string }> {
  await assertStoreAccess(svc, user, slug);
  const vetted = await assertPublicUrl(body.url, {
    allowPrivate: privateUrlsAllowed(svc.config),
    resolve: svc.extras.get(EXTRAS_RESOLVER) as Resolver | undefined,
  });
  // the 20-endpoint cap is the webhook actor's `register` (counted and inserted under a per-store lock)
  const id = crypto.randomUUID();
  const secret = generateWebhookSecret();
  const view = await svc.actors.ask(webhookActor, id, "register", {
    storeSlug: slug,
    url: vetted.url.href,
    events: [...new Set(body.events)],
    secretSealed: sealWebhookSecret(secretsKey(svc), id, secret),
    createdBy: user.id,
  });
  return { ...view, secret };
}

export async function listWebhookEndpoints(svc: Services, user: UserPrincipal, slug: string): Promise<WebhookEndpointView[]> {
  await assertStoreAccess(svc, user, slug);
  const rows = await svc.sql<Parameters<typeof endpointView>[0][]>`
    SELECT ${svc.sql.unsafe(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE store_slug = ${slug} AND deleted_at IS NULL ORDER BY created_at, id`;
  return rows.map(endpointView);
}

export async function deleteWebhookEndpoint(svc: Services, user: UserPrincipal, slug: string, pathId: string) {
  await assertStoreAccess(svc, user, slug);
  const id = await endpointIdOf(svc, slug, pathId);
  return svc.actors.ask(webhookActor, id, "remove", {}, { timeoutMs: 30_000 });
}

/**
 * Turns a disabled endpoint back on (breaker closed, failure streak reset) or off. Enabling does not replay the events
 * that happened while it was disabled (they were never fanned out to it); its dead deliveries can be redelivered.
 */
export async function setWebhookEndpointEnabled(svc: Services, user: UserPrincipal, slug: string, pathId: string, enabled: boolean): Promise<WebhookEndpointView> {
  await assertStoreAccess(svc, user, slug);
  const id = await endpointIdOf(svc, slug, pathId); // one activation per endpoint (M-5)
  return svc.actors.ask(webhookActor, id, enabled ? "enable" : "disable", {}, { timeoutMs: 30_000 });
}

export async function rotateWebhookSecret(svc: Services, user: UserPrincipal, slug: string, pathId: string, overlapSeconds?: number) {
  await assertStoreAccess(svc, user, slug);
  const id = await endpointIdOf(svc, slug, pathId); // the AAD must be the stored id (M-5)
  const secret = generateWebhookSecret();
  const overlapMs = overlapSeconds !== undefined ? overlapSeconds * 1000 : SECRET_ROTATION_OVERLAP_MS;
  const view = await svc.actors.ask(
    webhookActor,
    id,
    "rotateSecret",
    { secretSealed: sealWebhookSecret(secretsKey(svc), id, secret), overlapMs },
    { timeoutMs: 30_000 },
  );
  return { ...view, secret };
}

export async function listWebhookDeliveries(
  svc: Services,
  user: UserPrincipal,
  slug: string,
  pathId: string,
  query: { status?: "pending" | "failed" | "delivered" | "dead"; limit?: number } = {},
): Promise<WebhookDeliveryView[]> {
  await assertStoreAccess(svc, user, slug);
  const id = await endpointIdOf(svc, slug, pathId);
  const limit = query.limit ?? 50;
  const rows = await svc.sql<Parameters<typeof deliveryView>[0][]>`
    SELECT ${svc.sql.unsafe(DELIVERY_COLUMNS)} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
    WHERE d.endpoint_id = ${id} ${query.status ? svc.sql`AND d.status = ${query.status}` : svc.sql``}
    ORDER BY d.created_at DESC, d.id LIMIT ${limit}`;
  return rows.map(deliveryView);
}

export async function redeliverWebhook(svc: Services, user: UserPrincipal, slug: string, pathId: string, deliveryId: string) {
  await assertStoreAccess(svc, user, slug);
  const id = await endpointIdOf(svc, slug, pathId); // one activation per endpoint, and its reminder there (M-5)
  const view = await svc.actors.ask(webhookActor, id, "redeliver", { deliveryId: deliveryId.toLowerCase() }, { timeoutMs: 30_000 });
  // The durable reminder is armed; this only makes it go out now rather than at the next reminder poll.
  void svc.actors.ask(webhookActor, id, "deliverDue", {}, { timeoutMs: 60_000 }).catch(() => {});
  return view;
}

const RegisterBody = t.Object({
  url: t.String({ minLength: 1, maxLength: 2048, description: "https URL (http and private addresses only when ALLOW_PRIVATE_URLS)." }),
  events: t.Array(EventKind, { minItems: 1, maxItems: 3 }),
});
const RotateBody = t.Optional(
  t.Object({
    overlapSeconds: t.Optional(t.Integer({ minimum: 0, maximum: 7 * 86400, description: "How long the old secret keeps signing too (default 86400 = 24 h)." })),
  }),
);

export function webhookRoutes(svc: Services) {
  return new Elysia({ name: "webhook-routes" })
    .use(userAuth(svc))
    .post(
      BASE,
      async ({ params, body, user, set }) => {
        const created = await createWebhookEndpoint(svc, user, params.slug, body);
        set.status = 201;
        return ok(created);
      },
      {
        params: SlugParams,
        // a misspelt or unknown key (`enabled: false`, `evnets`) is 400 naming it, not dropped (audit W-7)
        ...strictJsonBody(RegisterBody),
        response: { 201: SuccessEnvelope(WithSecret), ...errorResponses(400, 401, 404, 409) },
        detail: { tags: ["webhooks"], summary: "Register a webhook endpoint (the secret is shown once)", security },
      },
    )
    .get(
      BASE,
      async ({ params, user }) => ok(await listWebhookEndpoints(svc, user, params.slug)),
      {
        params: SlugParams,
        response: { 200: SuccessEnvelope(t.Array(EndpointOut)), ...errorResponses(401, 404) },
        detail: { tags: ["webhooks"], summary: "List the store's webhook endpoints (never the secrets)", security },
      },
    )
    .delete(
      `${BASE}/:id`,
      async ({ params, user }) => ok(await deleteWebhookEndpoint(svc, user, params.slug, params.id)),
      {
        params: EndpointParams,
        ...noBody(),
        response: { 200: SuccessEnvelope(EndpointOut), ...errorResponses(400, 401, 404) },
        detail: { tags: ["webhooks"], summary: "Delete a webhook endpoint (its open deliveries are dead-lettered)", security },
      },
    )
    .post(
      `${BASE}/:id/enable`,
      async ({ params, user }) => ok(await setWebhookEndpointEnabled(svc, user, params.slug, params.id, true)),
      {
        params: EndpointParams,
        // takes no body (noBody): helper D's LOW item of session 20, `{"enabled": false}` sent to …/enable enabled it, 200
        ...noBody(),
        response: { 200: SuccessEnvelope(EndpointOut), ...errorResponses(400, 401, 404) },
        detail: {
          tags: ["webhooks"],
          summary: "Enable a disabled webhook endpoint (breaker and failure streak reset)",
          description:
            "New events are delivered again from now on. Events that happened while it was disabled are not replayed (no delivery was created for them); " +
            "its dead-lettered deliveries can be sent again with …/deliveries/{deliveryId}/redeliver. An enabled endpoint is answered unchanged.",
          security,
        },
      },
    )
    .post(
      `${BASE}/:id/disable`,
      async ({ params, user }) => ok(await setWebhookEndpointEnabled(svc, user, params.slug, params.id, false)),
      {
        params: EndpointParams,
        // takes no body (noBody): helper D's LOW item of session 20, `{"enabled": false}` sent to …/enable enabled it, 200
        ...noBody(),
        response: { 200: SuccessEnvelope(EndpointOut), ...errorResponses(400, 401, 404) },
        detail: {
          tags: ["webhooks"],
          summary: "Disable a webhook endpoint (no deliveries until it is enabled again)",
          description:
            "As the service does after 5 days without a 2xx answer: its open deliveries are dead-lettered (redeliverable once enabled), no delivery is created " +
            "for new events, and nothing is sent. A disabled endpoint is answered unchanged.",
          security,
        },
      },
    )
    .post(
      `${BASE}/:id/rotate-secret`,
      async ({ params, body, user }) => ok(await rotateWebhookSecret(svc, user, params.slug, params.id, body?.overlapSeconds)),
      {
        params: EndpointParams,
        parse: optionalObjectBody,
        // `overlapSecond: 0` was dropped: the secret the merchant meant to kill at once kept signing for 24 h (audit W-7)
        ...strictJsonBody(RotateBody),
        response: { 200: SuccessEnvelope(WithSecret), ...errorResponses(400, 401, 404) },
        detail: { tags: ["webhooks"], summary: "Rotate the signing secret (old and new both sign during the overlap)", security },
      },
    )
    .get(
      `${BASE}/:id/deliveries`,
      async ({ params, query, user }) => ok(await listWebhookDeliveries(svc, user, params.slug, params.id, query)),
      {
        params: EndpointParams,
        query: t.Object({
          status: t.Optional(t.Union([t.Literal("pending"), t.Literal("failed"), t.Literal("delivered"), t.Literal("dead")])),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })),
        }),
        response: { 200: SuccessEnvelope(t.Array(DeliveryOut)), ...errorResponses(400, 401, 404) },
        detail: { tags: ["webhooks"], summary: "Deliveries of an endpoint, newest first", security },
      },
    )
    .post(
      `${BASE}/:id/deliveries/:deliveryId/redeliver`,
      async ({ params, user, set }) => {
        const view = await redeliverWebhook(svc, user, params.slug, params.id, params.deliveryId);
        set.status = 202;
        return ok(view);
      },
      {
        params: DeliveryParams,
        ...noBody(),
        response: { 202: SuccessEnvelope(DeliveryOut), ...errorResponses(400, 401, 404, 409) },
        detail: {
          tags: ["webhooks"],
          summary: "Send a delivery again (same event id, fresh retry cycle)",
          description: "409 conflict while the endpoint is disabled: enable it first.",
          security,
        },
      },
    );
}
