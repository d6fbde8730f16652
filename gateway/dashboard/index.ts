/**
 * The merchant dashboard at {site_url}/dashboard: server-rendered HTML for store owners (operators may open any
 * store). Pages: overview, catalog (with JSONL upload), orders and refunds, settings, settings → webhooks.
 *
 * - Session cookie + per-session CSRF token on every POST (session.ts); a store that is not the user's reads
 *   as 404, exactly like the merchant REST API.
 * - Every change goes through the same path as the REST API: the store actor's messages (ingestCatalog,
 *   setPolicies, setOrderStatus, decideRefund, setAllowlist, settings messages) and the webhook operations
 *   exported by gateway/rest/webhooks.ts. Reads come from the store/trust read functions.
 * - Hidden from the OpenAPI document (HTML, not API). Rate limits: a bucket of its own per user (per IP before
 *   log-in, plus a log-in bucket per IP), instead of the global API layer.
 */
import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import { commerceMessages, storeCommerce } from "../../actors/store/commerce.ts";
import { storeActor } from "../../actors/store/index.ts";
import { PoliciesInput } from "../../actors/store/ingest.ts";
import {
  CATALOG_FLAGS,
  catalogQuality,
  countRefunds,
  declaredPolicies,
  listAllowlistPage,
  listCoupons,
  listRefundsPage,
  listStoreOrders,
  listStoreProducts,
  orderActivity,
  storeOrderDetail,
  storesOfUser,
  type CatalogFlag,
} from "../../actors/store/merchant-reads.ts";
import { MAX_CATALOG_BATCH } from "../../actors/store/ingest.ts";
import { countLines, externalIdRepeats, linesOf } from "../../actors/store/import-file.ts";
import { assertStoreWriter, findStore } from "../../actors/store/reads.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import { couponFromInput, PAYMENT_RAILS, settingsMessages, type PaymentRail } from "../../actors/store/settings.ts";
import { agentCheckoutAllowed, displayBand } from "../../actors/trust/bands.ts";
import { explainTrust, TREND_WINDOW_DAYS } from "../../actors/trust/explain.ts";
import { readTrustHistory } from "../../actors/trust/history.ts";
import { ActorError, ERROR_TABLE, fail, isInputDataError } from "../../actors/runtime/errors.ts";
import { WEBHOOK_EVENT_KINDS } from "../../actors/webhook/messages.ts";
import { ipBucketKey, type BucketDescriptor } from "../../actors/agent/limits.ts";
import { ALL_TOOLS } from "../mcp/tools/index.ts";
import { passwordLogin } from "../login.ts";
import { admitOthers, clientIp, setRateHeaders } from "../plugins/auth.ts";
import { DEFAULT_BODY_LIMIT } from "../plugins/body-limit.ts";
import { breachMessage, jsonBoundBreach, MAX_JSON_ARRAY_ITEMS, MAX_JSON_DEPTH, maxJsonValuesFor } from "../plugins/json-depth.ts";
import { registerOwnLayer } from "../plugins/rate-limit.ts";
import { fieldOfPath, innerUnionFailure, validationAnswer } from "../../infra/validation-message.ts";
import { ingestCatalogInParts } from "../rest/ingest-parts.ts";
import { agentCheckoutOpen, currentScore } from "../rest/trust.ts";
import { isStoreEligible } from "../../search/ranking.ts";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  redeliverWebhook,
  rotateWebhookSecret,
  setWebhookEndpointEnabled,
} from "../rest/webhooks.ts";
import type { Services } from "../services.ts";
import { CSS, CSS_PATH, JS, JS_PATH } from "./assets.ts";
import type { Html } from "./html.ts";
import { storeBase } from "./layout.ts";
import { errorPage, loginPage, pickerPage } from "./pages/basic.ts";
import { CONNECTED_APPS_PATH, connectedAppsPage } from "./pages/connected-apps.ts";
import { clientsOfUser, deleteClient, grantsOfUser, revokeGrant } from "../oauth/manage.ts";
import { isPossibleClientId } from "../oauth/clients.ts";
import { catalogPage, MAX_UPLOAD_LINES, SHOWN_REJECTIONS, type UploadOutcome } from "./pages/catalog.ts";
import { overviewPage } from "./pages/overview.ts";
import { MERCHANT_MOVES, ORDER_STATUSES, orderDetailPage, ordersPage } from "./pages/orders.ts";
import { ANY_STATUS, DECIDED_STATUSES, DEFAULT_DECIDED_STATUS, REFUND_PAGE_PARAMS, refundsPage } from "./pages/refunds.ts";
import { ALLOWLIST_PAGE_SIZE, allowlistQuery, settingsPage, webhooksPage, type AllowlistQuery, type PostedPolicies } from "./pages/settings.ts";
import { htmlHeaders, isTooLarge, tooLargePage } from "./too-large.ts";
import { safeNext } from "./edge.ts";
import {
  buildCookie,
  createSession,
  csrfValid,
  destroySession,
  loadSession,
  loginCookie,
  loginCsrfValid,
  loginNonce,
  loginToken,
  rememberStore,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  setFlash,
  takeFlash,
  type DashboardSession,
  type Flash,
} from "./session.ts";
import { isUuid, UUID_FORMAT_PATTERN } from "../../infra/uuid.ts";
import { preview } from "../../infra/echo.ts";
import { appendSetCookie, secureCookies } from "../cookies.ts";
import { isStoreSlug } from "../../actors/store/slug.ts";

/** Per signed-in user, per minute: generous for a person clicking, tight for a script. */
export const DASHBOARD_USER_LIMIT = { limit: 300, windowMs: 60_000 };
/** Per IP before log-in (log-in page, redirects). */
export const DASHBOARD_ANON_LIMIT = { limit: 120, windowMs: 60_000 };
const PAGE_SIZE = 50;
const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
/** The upload loop gives the event loop a turn this often (lines read), whether or not it awaited the actor. */
const YIELD_EVERY_LINES = 250;
/** The JSON bounds of one JSONL upload line (one product): those of a 1 MiB JSON body (plugins/json-depth.ts). */
const LINE_BOUNDS = { maxDepth: MAX_JSON_DEPTH, maxArrayItems: MAX_JSON_ARRAY_ITEMS, maxValues: maxJsonValuesFor(DEFAULT_BODY_LIMIT) };
const MAX_NOTE = commerceMessages.setOrderStatus.properties.note.maxLength!;
const COUPON_CODE = new RegExp(settingsMessages.upsertCoupon.properties.code.pattern!);
const HIDDEN = { hide: true } as const;

type Headers = Record<string, string | number>;
interface Ctx {
  request: Request;
  set: { status?: number | string; headers: Headers };
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  server: Parameters<typeof clientIp>[1];
}
type Handler = (c: Ctx) => Promise<string>;
/** Elysia's context is structurally richer than Ctx; routes hand it over through this one cast. */
const h = (fn: Handler) => (c: unknown) => fn(c as Ctx);

class NotFound extends Error {}

/**
 * Adds `r` to `kept` while it holds fewer than `max`, else in place of the highest line when `r`'s is lower (a
 * batch's rejections arrive after the lines read since it began), so `kept` ends as the `max` lowest lines.
 */
function keepFirst<T extends { line: number }>(kept: T[], r: T, max: number): void {
  if (kept.length < max) {
    kept.push(r);
    return;
  }
  let highest = 0;
  for (let i = 1; i < kept.length; i++) if (kept[i]!.line > kept[highest]!.line) highest = i;
  if (r.line < kept[highest]!.line) kept[highest] = r;
}

function respond(c: Ctx, status: number, body: Html): string {
  htmlHeaders(c.set.headers);
  c.set.status = status;
  return body.value;
}

function redirect(c: Ctx, location: string): string {
  c.set.status = 303;
  c.set.headers.location = location;
  c.set.headers["cache-control"] = "no-store";
  return "";
}

function pathOf(request: Request): string {
  const u = new URL(request.url);
  return u.pathname + u.search;
}

const text = (form: FormData, name: string): string => {
  const v = form.get(name);
  return typeof v === "string" ? v.trim() : "";
};
/**
 * A form POST's body. A chunked body cut at the dashboard's body limit (plugins/body-limit.ts counts it while it is
 * read) rethrows its 413 `payload_too_large`: read as an empty form it was answered with the CSRF 403, and the form
 * was never what the browser sent. Any other unreadable body is an empty form, which the CSRF check then refuses.
 */
async function readForm(request: Request): Promise<FormData> {
  try {
    return await request.formData();
  } catch (err) {
    if (isTooLarge(err)) throw err;
    return new FormData();
  }
}

const optNumber = (form: FormData, name: string): number | undefined => {
  const v = text(form, name);
  if (v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw fail("validation_error", `${name} must be a number.`, { field: name });
  return n;
};

/** A path id that must be a UUID (else the page does not exist), lower-cased as the database keeps it. */
function uuidParam(c: Ctx, name: string): string {
  const v = c.params[name] ?? "";
  if (!isUuid(v)) throw new NotFound();
  return v.toLowerCase();
}

/** The `page` query of a paged list: 1 to 10,000, 1 when absent or not a number. */
const pageParam = (c: Ctx, name = "page"): number => Math.max(1, Math.min(10_000, Number.parseInt(c.query[name] ?? "1", 10) || 1));

/** The actor host's refusal of a message that does not match its schema: "invalid store.upsertCoupon message: …". */
const MESSAGE_SCHEMA_REFUSAL = /^invalid [\w.]+ message:/;

export function actorMessage(err: unknown): string {
  if (err instanceof ActorError && err.code === "INVALID_ARGUMENT" && MESSAGE_SCHEMA_REFUSAL.test(err.message)) {
    // The text names the actor's message and its schema (internal): say which field instead (audit X-F6).
    const path = (err.details as { field?: unknown } | undefined)?.field;
    const field = typeof path === "string" ? path.replace(/^\//, "").replace(/\//g, ".") : "";
    return field ? `Invalid ${field}: the value is not accepted.` : "A value in the form is not accepted; nothing was changed.";
  }
  if (err instanceof ActorError) {
    const field = (err.details as { field?: unknown } | undefined)?.field;
    return typeof field === "string" && !err.message.includes(field) ? `${err.message} (${field})` : err.message;
  }
  return "Something went wrong; nothing was changed.";
}

export { safeNext };

let ownLayerRegistered = false;

export function dashboardRoutes(svc: Services) {
  if (!ownLayerRegistered) registerOwnLayer(/^\/dashboard(?:\/|$)/);
  ownLayerRegistered = true;

  /** How many refund requests of the store have this status (a count, not the capped unpaged list). */
  const refundCount = (slug: string, status: "PENDING_APPROVAL" | "FAILED"): Promise<number> => countRefunds(svc.sql, slug, { status });

  async function admit(c: Ctx, userId: string | null): Promise<void> {
    if (!svc.config.RATE_LIMITS_ENABLED) return;
    const ip = ipBucketKey(clientIp(c.request, c.server));
    const buckets: BucketDescriptor[] = userId
      ? [{ id: `user:${userId}:dashboard`, ...DASHBOARD_USER_LIMIT, owner: `user/${userId}`, layer: "public" }]
      : [{ id: `ip:${ip}:dashboard`, ...DASHBOARD_ANON_LIMIT, owner: `ip/${ip}`, layer: "public" }];
    setRateHeaders(c.set.headers, await admitOthers(svc, buckets, c.set.headers));
  }

  function renderError(c: Ctx, session: DashboardSession | null, err: unknown): string {
    if (err instanceof NotFound || (err instanceof ActorError && (err.code === "store_not_found" || err.code === "not_found" || err.code === "ORDER_NOT_FOUND"))) {
      return respond(c, 404, errorPage(session, 404, "Not found", "There is no such page, or it belongs to a store that is not yours."));
    }
    if (err instanceof ActorError && err.code === "rate_limit_exceeded") {
      return respond(c, 429, errorPage(session, 429, "Too many requests", "Please wait a minute and try again."));
    }
    if (isTooLarge(err)) {
      // The rest of the body is never read, so the connection cannot carry another request.
      c.set.headers.connection = "close";
      return respond(c, 413, tooLargePage(session, err));
    }
    if (err instanceof ActorError) {
      const status = ERROR_TABLE[err.code].http;
      return respond(c, status, errorPage(session, status, "Request refused", err.message));
    }
    if (isInputDataError(err)) {
      // a value the database refused (a NUL byte, an out-of-range number) came from the request: 400, as on REST
      return respond(c, 400, errorPage(session, 400, "Request refused", "A value in the request is not acceptable (for example a NUL byte)."));
    }
    svc.log.error("dashboard error", { path: new URL(c.request.url).pathname, error: err as Error, stack: (err as Error)?.stack });
    return respond(c, 500, errorPage(session, 500, "Something went wrong", "The error was logged. Please try again."));
  }

  const csrfRefused = (c: Ctx, s: DashboardSession | null) =>
    respond(c, 403, errorPage(s, 403, "Form expired", "This form did not come from your current session (missing or wrong CSRF token). Reload the page and try again."));

  /**
   * Every signed-in route: the session (rate-limited per user, or per IP without one), `anonymous`'s answer when
   * there is none, and any error as a page.
   */
  const withSession = (anonymous: (c: Ctx) => string, fn: (c: Ctx, s: DashboardSession) => Promise<string>): Handler =>
    async (c) => {
      let s: DashboardSession | null = null;
      try {
        s = await loadSession(svc, c.request);
        await admit(c, s?.user.id ?? null);
        if (!s) return anonymous(c);
        return await fn(c, s);
      } catch (err) {
        return renderError(c, s, err);
      }
    };

  /** A page that needs a session (else: to the log-in page, coming back here afterwards). */
  const page = (fn: (c: Ctx, s: DashboardSession) => Promise<string>): Handler =>
    withSession((c) => redirect(c, `/dashboard/login?next=${encodeURIComponent(pathOf(c.request))}`), fn);

  /** A form POST that needs a session (else: to the log-in page) and the session's CSRF token (else: 403). */
  const sessionPost = (fn: (c: Ctx, s: DashboardSession, form: FormData) => Promise<string>): Handler =>
    withSession(
      (c) => redirect(c, "/dashboard/login"),
      async (c, s) => {
        const form = await readForm(c.request);
        if (!csrfValid(s, form.get("_csrf") as string | null)) return csrfRefused(c, s);
        return fn(c, s, form);
      },
    );

  async function ownedStore(c: Ctx, s: DashboardSession): Promise<StoreRecord> {
    const slug = c.params.slug ?? "";
    if (!isStoreSlug(slug)) throw new NotFound();
    const store = await assertStoreWriter(svc.sql, slug, s.user);
    await rememberStore(svc, s, slug);
    return store;
  }

  const storePage = (fn: (c: Ctx, s: DashboardSession, store: StoreRecord, flash: Flash | null) => Promise<Html>): Handler =>
    page(async (c, s) => {
      const store = await ownedStore(c, s);
      return respond(c, 200, await fn(c, s, store, await takeFlash(svc, s)));
    });

  type ActionResult = { flash: Flash; to?: string } | { html: Html; status?: number };

  /**
   * A state change: session, then CSRF, then ownership, then the change. Refusals of the change itself (a bad
   * value, an illegal move) come back as a notice on the page the form was on.
   */
  const storeAction = (back: (c: Ctx, slug: string, form: FormData) => string, fn: (c: Ctx, s: DashboardSession, store: StoreRecord, form: FormData) => Promise<ActionResult>): Handler =>
    sessionPost(async (c, s, form) => {
      const store = await ownedStore(c, s);
      const to = back(c, store.slug, form);
      let result: ActionResult;
      try {
        result = await fn(c, s, store, form);
      } catch (err) {
        if (err instanceof NotFound || (err instanceof ActorError && ERROR_TABLE[err.code].http >= 500)) throw err;
        if (!(err instanceof ActorError)) throw err;
        result = { flash: { kind: "error", message: actorMessage(err) } };
      }
      if ("html" in result) return respond(c, result.status ?? 200, result.html);
      await setFlash(svc, s, result.flash);
      return redirect(c, result.to ?? to);
    });

  /** `back` form field when it is one of this store's dashboard pages, else the default. */
  const backTo = (fallback: (slug: string) => string) => (_c: Ctx, slug: string, form: FormData) => {
    const b = text(form, "back");
    return b.startsWith(storeBase(slug)) && safeNext(b) === b ? b : fallback(slug);
  };

  // ------------------------------------------------------------------------------------------ data loaders

  /** The settings page, with the policies form as posted when `posted` is given (a refused change). */
  async function settingsHtml(s: DashboardSession, store: StoreRecord, flash: Flash | null, posted?: PostedPolicies, allow: AllowlistQuery = { page: 1 }): Promise<Html> {
    // one page of the allowlist (audit M-1: the whole list was rendered)
    const pageSize = ALLOWLIST_PAGE_SIZE;
    const [bindings, coupons, seen] = await Promise.all([
      listAllowlistPage(svc.sql, store.slug, { ...(allow.status ? { status: allow.status } : {}), limit: pageSize, offset: (allow.page - 1) * pageSize }),
      listCoupons(svc.sql, store.slug),
      findStore(svc.sql, store.slug),
    ]);
    const allowlist = { ...bindings, ...allow, pageSize };
    const tools = ALL_TOOLS.map((t) => ({ name: t.name, title: t.title, group: t.group }));
    // what agents read (the zones' promises) beside the stored policies the form edits
    const agentShipping = seen ? { freeShippingThresholdMinor: seen.policies.freeShippingThresholdMinor, shippingEstimateDays: seen.policies.shippingEstimateDays } : undefined;
    return settingsPage(s, { store, tools, allowlist, coupons, ...(agentShipping ? { agentShipping } : {}), ...(posted ? { postedPolicies: posted } : {}) }, flash, svc.clock.now());
  }

  async function webhooksData(s: DashboardSession, store: StoreRecord) {
    const endpoints = await listWebhookEndpoints(svc, s.user, store.slug);
    return Promise.all(endpoints.map(async (e) => ({ ...e, deliveries: await listWebhookDeliveries(svc, s.user, store.slug, e.id, { limit: 10 }) })));
  }

  /** The webhooks page showing an endpoint's new secret, the one time it is ever shown (added or rotated). */
  async function webhooksWithSecret(s: DashboardSession, store: StoreRecord, ep: { id: string; url: string; secret: string }, rotated: boolean, flash: Flash | null): Promise<Html> {
    const endpoints = await webhooksData(s, store);
    return webhooksPage(s, { store, endpoints, newSecret: { endpointId: ep.id, url: ep.url, secret: ep.secret, rotated } }, flash);
  }

  const toWebhooks = (_c: Ctx, slug: string) => `${storeBase(slug)}/settings/webhooks`;

  /**
   * A JSONL upload through the store actor, read line by line from the file's stream (`linesOf`, the CLI import's
   * reader). The caller has checked the line cap. Memory holds one chunk, one batch, the accepted externalIds and
   * the first `SHOWN_REJECTIONS` rejections (the rest are counted). The event loop gets a turn every
   * `YIELD_EVERY_LINES` lines: lines refused here (not JSON, past the bounds, repeats) never await the actor, and a
   * 20 MB file of them held every other request for 34 s (audit X-F1).
   */
  async function ingestJsonl(slug: string, name: string, file: Blob): Promise<UploadOutcome> {
    const out: UploadOutcome = { fileName: name, lines: 0, accepted: 0, removed: 0, rejectedCount: 0, rejected: [] };
    const reject = (r: UploadOutcome["rejected"][number]) => {
      out.rejectedCount++;
      keepFirst(out.rejected, r, SHOWN_REJECTIONS);
    };
    const batch: { line: number; item: unknown }[] = [];
    const repeats = externalIdRepeats();
    const flush = async () => {
      if (!batch.length) return;
      // What PUT /catalog sends: per-item validation, in parts under the actor bus's message size (ingest-parts.ts).
      const r = await ingestCatalogInParts(svc.actors, slug, batch.map((b) => b.item));
      out.accepted += r.accepted;
      out.removed += r.removed;
      for (const rej of repeats.settle(batch, r)) {
        reject({ line: rej.line, externalId: rej.externalId, errors: rej.errors.map((e) => `${e.field}: ${e.message}`) });
      }
      batch.length = 0;
    };
    for await (const { line: n, text: raw } of linesOf(file.stream())) {
      if (n % YIELD_EVERY_LINES === 0) await new Promise((r) => setImmediate(r));
      const line = raw.trim();
      if (!line) continue;
      out.lines++;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        reject({ line: n, externalId: null, errors: ["not valid JSON"] });
        continue;
      }
      // The body bounds every JSON route has (plugins/json-depth.ts), per line: a line nested 100,000 levels deep
      // overflowed the stack (a 500), and one 10,000 levels deep was stored and served to agents (review H,
      // finding 4). A line is one product, so it gets a 1 MiB route's budget.
      const breach = jsonBoundBreach(value, LINE_BOUNDS);
      if (breach) {
        reject({ line: n, externalId: null, errors: [breachMessage(breach, "The line").message] });
        continue;
      }
      // The CLI import's whole-file rule: the store actor sees repeats only inside one batch, so a repeat in a
      // later batch overwrote the first line and the result hung on the batch boundaries. The first line the actor
      // accepts wins (`settle` records it from the answer), so a correction after a rejected line is imported.
      const repeat = repeats.check(value, n);
      if (repeat) {
        reject({ line: n, externalId: repeat.externalId, errors: [`${repeat.field}: ${repeat.message}`] });
        continue;
      }
      batch.push({ line: n, item: value });
      if (batch.length >= MAX_CATALOG_BATCH) await flush();
    }
    await flush();
    out.rejected.sort((a, b) => a.line - b.line);
    return out;
  }

  const app = new Elysia({ name: "dashboard-routes" })
    .get(
      "/dashboard/assets/:file",
      ({ params, set }) => {
        const headers = set.headers as Headers;
        const path = `/dashboard/assets/${params.file}`;
        headers["cache-control"] = "public, max-age=31536000, immutable";
        headers["x-content-type-options"] = "nosniff";
        if (path === CSS_PATH) return new Response(CSS, { headers: { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=31536000, immutable" } });
        if (path === JS_PATH) return new Response(JS, { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=31536000, immutable" } });
        set.status = 404;
        headers["content-type"] = "text/plain";
        return "not found";
      },
      { detail: HIDDEN },
    )
    // ------------------------------------------------------------------------------------------- log-in
    .get(
      "/dashboard/login",
      h(async (c) => {
        try {
          await admit(c, null);
          const s = await loadSession(svc, c.request);
          const next = safeNext(c.query.next);
          if (s) return redirect(c, next);
          // the browser's nonce when it has one (shared by its open log-in tabs), its Max-Age refreshed
          const nonce = loginNonce(c.request);
          c.set.headers["set-cookie"] = loginCookie(svc, nonce);
          return respond(c, 200, loginPage({ token: loginToken(svc, nonce), next }));
        } catch (err) {
          return renderError(c, null, err);
        }
      }),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/login",
      h(async (c) => {
        try {
          await admit(c, null);
          const form = await readForm(c.request);
          if (!loginCsrfValid(svc, c.request, form.get("_csrf") as string | null)) return csrfRefused(c, null);
          const email = text(form, "email").toLowerCase();
          const password = typeof form.get("password") === "string" ? (form.get("password") as string) : "";
          const next = safeNext(text(form, "next"));
          // the log-in buckets shared with the REST log-in and the OAuth consent form (gateway/login.ts)
          const user = await passwordLogin(svc, { ip: clientIp(c.request, c.server), email, password, headers: c.set.headers, cookie: c.request.headers.get("cookie"), browser: true });
          if (!user) {
            return respond(c, 401, loginPage({ token: text(form, "_csrf"), next, email, error: "Invalid e-mail or password." }));
          }
          const session = await createSession(svc, user.id);
          // the session cookie first, beside the known-device cookie the log-in has set
          appendSetCookie(c.set.headers, buildCookie(SESSION_COOKIE, session.id, { secure: secureCookies(svc), maxAgeSeconds: SESSION_TTL_MS / 1000 }), true);
          return redirect(c, next);
        } catch (err) {
          return renderError(c, null, err);
        }
      }),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/logout",
      h(
        sessionPost(async (c, s) => {
          await destroySession(svc, s);
          c.set.headers["set-cookie"] = buildCookie(SESSION_COOKIE, "", { secure: secureCookies(svc), maxAgeSeconds: 0 });
          return redirect(c, "/dashboard/login");
        }),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    // ------------------------------------------------------------------------------------- store picker
    .get(
      "/dashboard",
      h(
        page(async (c, s) => {
          const stores = await storesOfUser(svc.sql, s.user);
          if (!c.query.switch) {
            if (s.storeSlug && stores.some((x) => x.slug === s.storeSlug)) return redirect(c, storeBase(s.storeSlug));
            if (stores.length === 1) return redirect(c, storeBase(stores[0]!.slug));
          }
          return respond(c, 200, pickerPage(s, stores));
        }),
      ),
      { detail: HIDDEN },
    )
    // ------------------------------------------------------------------- connected apps (OAuth; audit X-1)
    .get(
      CONNECTED_APPS_PATH,
      h(
        page(async (c, s) => {
          const [grants, clients] = await Promise.all([grantsOfUser(svc, s.user.id), clientsOfUser(svc, s.user.id)]);
          return respond(c, 200, connectedAppsPage(s, { grants, clients }, await takeFlash(svc, s)));
        }),
      ),
      { detail: HIDDEN },
    )
    .post(
      `${CONNECTED_APPS_PATH}/grants/:id/revoke`,
      h(
        sessionPost(async (c, s) => {
          // another user's or an unknown grant: the 404 page (revokeGrant's not_found)
          await revokeGrant(svc, s.user.id, c.params.id ?? "");
          await setFlash(svc, s, { kind: "ok", message: "Access revoked: the app must ask you again." });
          return redirect(c, CONNECTED_APPS_PATH);
        }),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      `${CONNECTED_APPS_PATH}/clients/:client_id/delete`,
      h(
        sessionPost(async (c, s) => {
          // an id no client can have (a NUL byte, which Postgres refuses in text; over 2048 characters) is the 404 page
          // of any unknown client, before any SQL (audit A-3: a 500); never cut, a cut URL names another client
          const clientId = c.params.client_id ?? "";
          if (!isPossibleClientId(clientId)) throw new NotFound();
          const gone = await deleteClient(svc, s.user, clientId);
          await setFlash(svc, s, { kind: "ok", message: `Client deleted${gone.grantsRevoked ? `, with ${gone.grantsRevoked} authorization(s) users gave it` : ""}.` });
          return redirect(c, CONNECTED_APPS_PATH);
        }),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    // ------------------------------------------------------------------------------------------ overview
    .get(
      "/dashboard/s/:slug",
      h(
        storePage(async (_c, s, store, flash) => {
          const now = svc.clock.now();
          let trust = null;
          let trustError: string | null = null;
          let explanation = null;
          const historyFrom = now - 90 * 86_400_000;
          const history = await readTrustHistory(svc.sql, store.slug, new Date(historyFrom));
          try {
            const { row, score } = await currentScore(svc, store.slug);
            const sel = score.selected;
            trust = {
              score0to100: sel.score0to100,
              score0to1: sel.score0to1,
              band: displayBand(sel.score0to1),
              operationalStatus: score.status,
              confidence: sel.confidence_level,
              engine: sel.engines.overall,
              agentCheckoutAllowed: agentCheckoutOpen(sel.score0to1, store.verificationLevel, score.status),
              computedAt: row.computed_at.toISOString(),
            };
            explanation = explainTrust(sel, history.filter((p) => p.at >= now - TREND_WINDOW_DAYS * 86_400_000), now, {
              eligible: isStoreEligible({ trustScore: sel.score0to1, verificationLevel: store.verificationLevel, storeStatus: score.status }),
            });
          } catch (err) {
            trustError = err instanceof ActorError ? err.message : "The score could not be read right now.";
          }
          const [activity, quality, pending] = await Promise.all([
            orderActivity(svc.sql, store.slug, 30, new Date(now)),
            catalogQuality(svc.sql, store, new Date(now)),
            refundCount(store.slug, "PENDING_APPROVAL"),
          ]);
          return overviewPage(s, { store, trust, trustError, history, historyFrom, explanation, activity, quality, pendingRefunds: pending, now }, flash);
        }),
      ),
      { detail: HIDDEN },
    )
    // ------------------------------------------------------------------------------------------- catalog
    .get(
      "/dashboard/s/:slug/catalog",
      h(
        storePage(async (c, s, store, flash) => {
          const now = new Date(svc.clock.now());
          const flag = CATALOG_FLAGS.includes(c.query.flag as CatalogFlag) ? (c.query.flag as CatalogFlag) : undefined;
          const pageNo = pageParam(c);
          const [quality, products] = await Promise.all([
            catalogQuality(svc.sql, store, now),
            listStoreProducts(svc.sql, store.slug, { limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE, flag, now }),
          ]);
          return catalogPage(s, { store, quality, products, flag, page: pageNo, pageSize: PAGE_SIZE, now: now.getTime() }, flash);
        }),
      ),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/s/:slug/catalog/upload",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/catalog`,
          async (_c, s, store, form) => {
            const file = form.get("file");
            if (!(file instanceof Blob) || file.size === 0) return { flash: { kind: "error", message: "Choose a non-empty JSONL file to upload." } };
            if (file.size > MAX_UPLOAD_BYTES) return { flash: { kind: "error", message: "The file is larger than 20 MB; split it or use the CLI (bun run cli import)." } };
            // Counted before anything is sent, so a file over the cap changes nothing (not its first 100,000 lines).
            if (countLines(await file.bytes(), MAX_UPLOAD_LINES) > MAX_UPLOAD_LINES) {
              return { flash: { kind: "error", message: `The file has more than ${MAX_UPLOAD_LINES.toLocaleString("en-US")} lines; nothing was imported. Split it, or import it with the CLI (bun run cli import), which has no line limit.` } };
            }
            const name = file instanceof File && file.name ? file.name : "upload.jsonl";
            const outcome = await ingestJsonl(store.slug, name, file);
            const now = new Date(svc.clock.now());
            const fresh = (await assertStoreWriter(svc.sql, store.slug, s.user)) ?? store;
            const [quality, products] = await Promise.all([
              catalogQuality(svc.sql, fresh, now),
              listStoreProducts(svc.sql, store.slug, { limit: PAGE_SIZE, offset: 0, now }),
            ]);
            return { html: catalogPage(s, { store: fresh, quality, products, page: 1, pageSize: PAGE_SIZE, upload: outcome, now: now.getTime() }, null) };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    // -------------------------------------------------------------------------------- orders and refunds
    .get(
      "/dashboard/s/:slug/orders",
      h(
        storePage(async (c, s, store, flash) => {
          const status = (ORDER_STATUSES as readonly string[]).includes(c.query.status ?? "") ? c.query.status : undefined;
          const channel = c.query.channel === "agent" || c.query.channel === "human" ? c.query.channel : undefined;
          const pageNo = pageParam(c);
          const [orders, pending] = await Promise.all([
            listStoreOrders(svc.sql, store.slug, { limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE, status, channel }),
            refundCount(store.slug, "PENDING_APPROVAL"),
          ]);
          return ordersPage(s, { store, orders, status, channel, page: pageNo, pageSize: PAGE_SIZE, pendingRefunds: pending }, flash);
        }),
      ),
      { detail: HIDDEN },
    )
    .get(
      "/dashboard/s/:slug/orders/:id",
      h(
        storePage(async (c, s, store, flash) => {
          const order = await storeOrderDetail(svc.sql, store.slug, uuidParam(c, "id"));
          if (!order) throw new NotFound();
          return orderDetailPage(s, store, order, flash);
        }),
      ),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/s/:slug/orders/:id/status",
      h(
        storeAction(
          (c, slug) => `${storeBase(slug)}/orders/${isUuid(c.params.id ?? "") ? c.params.id : ""}`,
          async (c, s, store, form) => {
            const orderId = uuidParam(c, "id");
            const status = text(form, "status");
            if (!(MERCHANT_MOVES as readonly string[]).includes(status)) return { flash: { kind: "error", message: "Choose one of fulfilled, shipped, delivered or canceled." } };
            // Refused past the message's bound, as PUT …/status is (maxLength counts UTF-16 units, as the input's
            // maxlength does): cutting at 500 could split an emoji, and the lone half was refused by Postgres with a
            // misleading notice (audit X-F7).
            const note = text(form, "note");
            if (note.length > MAX_NOTE) return { flash: { kind: "error", message: `A note has at most ${MAX_NOTE} characters; nothing was changed.` } };
            const r = await svc.actors.ask(storeCommerce, store.slug, "setOrderStatus", {
              orderId,
              status: status as (typeof MERCHANT_MOVES)[number],
              userId: s.user.id,
              ...(note ? { note } : {}),
            });
            return { flash: { kind: "ok", message: `Order is now ${r.status}.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .get(
      "/dashboard/s/:slug/refunds",
      h(
        storePage(async (c, s, store, flash) => {
          const status = c.query.status === ANY_STATUS ? undefined : (DECIDED_STATUSES.find((x) => x === c.query.status) ?? DEFAULT_DECIDED_STATUS);
          const waitingPage = pageParam(c, REFUND_PAGE_PARAMS.waiting);
          const historyPage = pageParam(c, REFUND_PAGE_PARAMS.history);
          const [waiting, history, failedTotal] = await Promise.all([
            listRefundsPage(svc.sql, store.slug, { status: "PENDING_APPROVAL", limit: PAGE_SIZE, offset: (waitingPage - 1) * PAGE_SIZE }),
            listRefundsPage(svc.sql, store.slug, { ...(status ? { status } : {}), limit: PAGE_SIZE, offset: (historyPage - 1) * PAGE_SIZE }),
            refundCount(store.slug, "FAILED"),
          ]);
          return refundsPage(
            s,
            { store, pageSize: PAGE_SIZE, waiting: { page: waitingPage, ...waiting }, history: { page: historyPage, ...history, ...(status ? { status } : {}) }, failedTotal },
            flash,
          );
        }),
      ),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/s/:slug/refunds/:id/:decision",
      h(
        storeAction(backTo((slug) => `${storeBase(slug)}/refunds`), async (c, s, store) => {
          const refundId = uuidParam(c, "id");
          const decision = c.params.decision;
          if (decision !== "approve" && decision !== "reject") throw new NotFound();
          const r = await svc.actors.ask(storeCommerce, store.slug, "decideRefund", { refundId, decision, userId: s.user.id });
          const what = r.status === "REFUNDED" ? "approved and refunded" : r.status === "REJECTED" ? "rejected" : r.status === "FAILED" ? "approved, but the refund through the rail failed (retry later)" : r.status.toLowerCase();
          return { flash: { kind: r.status === "FAILED" ? "error" : "ok", message: `Refund of order ${r.order_id.slice(0, 8)} ${what}.` } };
        }),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    // ------------------------------------------------------------------------------------------ settings
    .get(
      "/dashboard/s/:slug/settings",
      h(
        storePage(async (c, s, store, flash) => settingsHtml(s, store, flash, undefined, allowlistQuery(c.query))),
      ),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/s/:slug/settings/policies",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#policies`,
          async (_c, s, store, form) => {
            const posted: PostedPolicies = {
              acceptsReturns: form.get("acceptsReturns") === "1",
              returnWindowDays: text(form, "returnWindowDays"),
              freeShippingThreshold: text(form, "freeShippingThreshold"),
              restockingFeePercent: text(form, "restockingFeePercent"),
              shippingEstimateDays: text(form, "shippingEstimateDays"),
              supportResponseTimeSla: text(form, "supportResponseTimeSla"),
            };
            try {
              const input: Record<string, unknown> = { acceptsReturns: posted.acceptsReturns };
              const set = (k: string, v: unknown) => v !== undefined && v !== "" && (input[k] = v);
              // Unchecking "Accepts returns" leaves the stored window in its field: the box is what the merchant
              // changed, so the window is not sent (it was, and every uncheck was refused: audit X-F5).
              if (posted.acceptsReturns) set("returnWindowDays", optNumber(form, "returnWindowDays"));
              set("freeShippingThreshold", optNumber(form, "freeShippingThreshold"));
              set("restockingFeePercent", optNumber(form, "restockingFeePercent"));
              set("shippingEstimateDays", posted.shippingEstimateDays);
              set("supportResponseTimeSla", posted.supportResponseTimeSla);
              assertPolicies(input);
              const r = await svc.actors.ask(storeActor, store.slug, "setPolicies", { policies: input as PoliciesInput });
              return { flash: { kind: "ok", message: `Policies saved (version ${r.policyVersion}).` } };
            } catch (err) {
              // A refusal shows the form again as posted, so the merchant's other edits are not lost to a redirect
              // that shows the stored values (audit X-F5).
              if (!(err instanceof ActorError) || ERROR_TABLE[err.code].http >= 500) throw err;
              const html = await settingsHtml(s, store, { kind: "error", message: actorMessage(err) }, posted);
              return { html, status: ERROR_TABLE[err.code].http };
            }
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/negotiation",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#negotiation`,
          async (_c, _s, store, form) => {
            const negotiation = {
              enabled: form.get("enabled") === "1",
              floorPercent: optNumber(form, "floorPercent") ?? 0,
              autoAcceptPercent: optNumber(form, "autoAcceptPercent") ?? 100,
              maxRounds: optNumber(form, "maxRounds") ?? 1,
              // one per line: a category may contain a comma ("Home, Garden" was split in two: audit A3-9)
              excludedCategories: text(form, "excludedCategories").split(/\r?\n/).map((x) => x.trim()).filter(Boolean),
            };
            // PUT /policies replaces the policies: what the merchant declared goes back unchanged with the new rules
            // (`declaredPolicies`, what GET /policies answers), never the view's 30-day default window, so a save of the
            // rules declares nothing else for them (trust's policy completeness reads the declared fields; session 15,
            // B's note).
            const input = { ...declaredPolicies(store), negotiation };
            assertPolicies(input);
            await svc.actors.ask(storeActor, store.slug, "setPolicies", { policies: input as PoliciesInput });
            return { flash: { kind: "ok", message: `Negotiation rules saved (${negotiation.enabled ? "enabled" : "disabled"}).` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/mcp-tools",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#mcp`,
          async (_c, _s, store, form) => {
            const known = new Set(ALL_TOOLS.map((t) => t.name));
            const picked = form.getAll("tools").filter((v): v is string => typeof v === "string");
            const unknown = picked.filter((t) => !known.has(t));
            // a bounded, escaped preview: the name whole could be 10,000 characters, or hold a NUL the notice's jsonb refuses
            if (unknown.length) return { flash: { kind: "error", message: `Unknown tool: ${preview(unknown[0])}.` } };
            const tools = text(form, "mode") === "all" ? null : picked;
            const r = await svc.actors.ask(storeActor, store.slug, "setEnabledMcpTools", { tools });
            return { flash: { kind: "ok", message: r.enabledMcpTools === null ? "All MCP tools are served." : `${r.enabledMcpTools.length} MCP tools are served.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/payment-methods",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#rails`,
          async (_c, _s, store, form) => {
            const picked = form.getAll("methods").filter((v): v is PaymentRail => typeof v === "string" && (PAYMENT_RAILS as readonly string[]).includes(v));
            const r = await svc.actors.ask(storeActor, store.slug, "setPaymentMethods", { methods: picked });
            return { flash: { kind: "ok", message: r.paymentMethods.length ? `Payment rails: ${r.paymentMethods.join(", ")}.` : "No payment rail is offered: agents cannot check out." } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/allowlist/:keyId",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#allow`,
          async (c, _s, store, form) => {
            const agentKeyId = uuidParam(c, "keyId");
            // the message schema's rule (format "uuid"): an id outside it names no agent key (audit X-F6)
            if (!UUID_FORMAT_PATTERN.test(agentKeyId)) throw new NotFound();
            const status = text(form, "status");
            if (status !== "allowed" && status !== "blocked") return { flash: { kind: "error", message: "Status must be allowed or blocked." } };
            await svc.actors.ask(storeCommerce, store.slug, "setAllowlist", { agentKeyId, status });
            return { flash: { kind: "ok", message: `Agent key ${c.params.keyId!.slice(0, 8)}… is now ${status}.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/coupons",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#coupons`,
          async (_c, _s, store, form) => {
            const kind = text(form, "kind") === "fixed" ? "fixed" : "percent";
            const raw = optNumber(form, "value");
            if (raw === undefined || raw <= 0) return { flash: { kind: "error", message: "A coupon needs a value above 0." } };
            // the form's datetime-local has no zone: it is read as UTC
            const exp = text(form, "expiresAt");
            const minSpend = optNumber(form, "minSpend");
            const limit = optNumber(form, "usageLimit");
            // the money, percent, date and limit rules are REST's (couponFromInput), not a copy (audit A3-3)
            const code = text(form, "code");
            // the message's own pattern, with words instead of the schema's text (audit X-F6)
            if (!COUPON_CODE.test(code)) return { flash: { kind: "error", message: "Invalid code: use 2 to 64 letters, digits, hyphens (-) or underscores (_)." } };
            const coupon = couponFromInput(
              {
                code,
                kind,
                value: raw,
                ...(minSpend === undefined ? {} : { minSpend }),
                expiresAt: exp ? (/Z|[+-]\d\d:?\d\d$/.test(exp) ? exp : `${exp}Z`) : null,
                usageLimit: limit ?? null,
              },
              store.currency,
            );
            const r = await svc.actors.ask(storeActor, store.slug, "upsertCoupon", coupon);
            return { flash: { kind: "ok", message: `Coupon ${r.code} ${r.created ? "added" : "updated"}.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/coupons/:code/active",
      h(
        storeAction(
          (_c, slug) => `${storeBase(slug)}/settings#coupons`,
          async (c, _s, store, form) => {
            const r = await svc.actors.ask(storeActor, store.slug, "setCouponActive", { code: (c.params.code ?? "").slice(0, 64), active: text(form, "active") === "1" });
            return { flash: { kind: "ok", message: `Coupon ${r.code} ${r.active ? "activated" : "deactivated"}.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    // ------------------------------------------------------------------------------ settings → webhooks
    .get(
      "/dashboard/s/:slug/settings/webhooks",
      h(storePage(async (_c, s, store, flash) => webhooksPage(s, { store, endpoints: await webhooksData(s, store) }, flash))),
      { detail: HIDDEN },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks",
      h(
        storeAction(
          toWebhooks,
          async (_c, s, store, form) => {
            const url = text(form, "url");
            const events = form.getAll("events").filter((v): v is (typeof WEBHOOK_EVENT_KINDS)[number] => typeof v === "string" && (WEBHOOK_EVENT_KINDS as readonly string[]).includes(v));
            if (!url || url.length > 2048) return { flash: { kind: "error", message: "Enter the endpoint's URL." } };
            if (!events.length) return { flash: { kind: "error", message: "Choose at least one event." } };
            const created = await createWebhookEndpoint(svc, s.user, store.slug, { url, events });
            return { html: await webhooksWithSecret(s, store, created, false, { kind: "ok", message: "Endpoint added." }), status: 201 };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks/:id/rotate",
      h(
        storeAction(
          toWebhooks,
          async (c, s, store) => {
            const rotated = await rotateWebhookSecret(svc, s.user, store.slug, uuidParam(c, "id"));
            return { html: await webhooksWithSecret(s, store, rotated, true, null) };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks/:id/enable",
      h(
        storeAction(
          toWebhooks,
          async (c, s, store) => {
            const ep = await setWebhookEndpointEnabled(svc, s.user, store.slug, uuidParam(c, "id"), true);
            return { flash: { kind: "ok", message: `Endpoint ${ep.url} enabled: new events are delivered again (events while it was disabled are not).` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks/:id/disable",
      h(
        storeAction(
          toWebhooks,
          async (c, s, store) => {
            const ep = await setWebhookEndpointEnabled(svc, s.user, store.slug, uuidParam(c, "id"), false);
            return { flash: { kind: "ok", message: `Endpoint ${ep.url} disabled.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks/:id/delete",
      h(
        storeAction(
          toWebhooks,
          async (c, s, store) => {
            const gone = await deleteWebhookEndpoint(svc, s.user, store.slug, uuidParam(c, "id"));
            return { flash: { kind: "ok", message: `Endpoint ${gone.url} deleted.` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    )
    .post(
      "/dashboard/s/:slug/settings/webhooks/:id/deliveries/:deliveryId/redeliver",
      h(
        storeAction(
          toWebhooks,
          async (c, s, store) => {
            const d = await redeliverWebhook(svc, s.user, store.slug, uuidParam(c, "id"), uuidParam(c, "deliveryId"));
            return { flash: { kind: "ok", message: `Delivery of ${d.event} queued again (same event id).` } };
          },
        ),
      ),
      { detail: HIDDEN, parse: "none" },
    );
  return app;
}

function assertPolicies(input: unknown): asserts input is PoliciesInput {
  if (Value.Check(PoliciesInput, input)) return;
  // REST's words for the same failure: the negotiation rules are an object-or-null union, whose own error ("Expected
  // union value") named neither the category nor its bound (helper F); innerUnionFailure finds the rule inside them.
  const first = Value.Errors(PoliciesInput, input).First();
  const check = innerUnionFailure(first) ?? first;
  const field = fieldOfPath(check?.path) ?? "policies";
  const what = (validationAnswer("form", field, check).details.errors as { message: string }[])[0]!.message;
  throw fail("validation_error", `Invalid ${field}: ${what}`, { field });
}
