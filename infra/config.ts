/**
 * The one configuration object, read from the environment and validated with TypeBox.
 * A bad value stops start-up with one line naming the variable and what it allows (ConfigError).
 * Every variable is listed in README.md; keep the two in step (test/unit/config.test.ts checks it).
 */
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

const Bool = T.Boolean();
const Port = T.Integer({ minimum: 0, maximum: 65535 });
/**
 * The longest delay a timer keeps (2^31 - 1 ms, about 24.8 days): Bun, like Node, sets a longer one to 1 ms, so a
 * "monthly" job interval would run back to back (review RZ-4).
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The one rule for a duration setting (every `*_MS` variable; test/unit/config.test.ts checks each): an integer number
 * of milliseconds from `minimum` to MAX_TIMER_MS, refused at start-up past it with the usual ConfigError line, and the
 * bound said in its README row. RETENTION_INTERVAL_MS is a setInterval period and ACTOR_IDLE_MS is swept every half
 * of itself, so past the bound they would fire every millisecond. The others end up in a deadline, a reminder's due
 * time or a lease (Date and Postgres interval arithmetic, with 120 s at most added): no timer holds them today, but
 * one may tomorrow, and none needs more than days.
 */
function durationMs<D extends number>(minimum: number, defaultMs: D, doc: string) {
  return {
    schema: T.Integer({ minimum, maximum: MAX_TIMER_MS }),
    default: defaultMs,
    doc: `${doc} At most ${MAX_TIMER_MS} (about 24.8 days, the longest timer delay).`,
  };
}

/** Each entry: schema, default, one-line description (rendered into the README table by `bun infra/gen-config-table.ts`). */
export const CONFIG_VARS = {
  HOST: { schema: T.String({ minLength: 1 }), default: "127.0.0.1", doc: "Interface the HTTP gateway binds to." },
  PORT: { schema: Port, default: 3000, doc: "HTTP port of the gateway (0 picks a free port)." },
  REUSE_PORT: {
    schema: Bool,
    default: false,
    doc: "Role gateway only: several gateway processes of one machine listen on the same HOST:PORT (SO_REUSEPORT; the kernel spreads new connections over them), so one machine's cores all serve the API. Each process keeps its own search index (its memory). Refused on role start and with PORT=0; role actors has no API port and ignores it (docs/operations.md, Several gateways on one machine).",
  },
  SITE_URL: {
    schema: T.String({ pattern: "^https?://" }),
    default: "",
    doc: "Public origin serving MCP endpoints and well-known files ({site_url}), and the issuer of bearer and OAuth tokens: the same on every gateway of a deployment; default http://HOST:PORT on start and gateways (an actor host without it signs trust scores with no iss; required for every role when NODE_ENV=production and NATS_URL is set).",
  },
  DATA_DIR: { schema: T.String({ minLength: 1 }), default: "./data", doc: "Where the embedded Postgres and generated keys live." },
  DATABASE_URL: {
    schema: T.String({ pattern: "^postgres(ql)?://" }),
    default: "",
    doc: "External Postgres (>= 15). Unset: an embedded Postgres is started in DATA_DIR/pg.",
  },
  NATS_URL: {
    schema: T.String({ pattern: "^(nats|tls|ws|wss)://" }),
    default: "",
    doc: "NATS servers (comma-separated). Unset: actors talk over the in-process bus.",
  },
  MEILISEARCH_URL: { schema: T.String({ pattern: "^https?://" }), default: "", doc: "Meilisearch server. Unset: the embedded search engine." },
  MEILISEARCH_KEY: { schema: T.String(), default: "", doc: "Meilisearch API key." },
  ADMIN_EMAIL: { schema: T.String({ pattern: "^[^@\\s]+@[^@\\s]+$" }), default: "admin@example.com", doc: "Operator account seeded by `bun run start` (role start) and by `bun run seed` when no operator exists (dev-only default)." },
  ADMIN_PASSWORD: { schema: T.String({ minLength: 8 }), default: "admin-password", doc: "Password of that seeded operator (dev-only default; with NODE_ENV=production `bun run seed` refuses to create an operator with it)." },
  ALLOW_PRIVATE_URLS: {
    schema: Bool,
    default: true,
    doc: "Allow webhook/facilitator URLs on private or loopback addresses (true on the embedded default; refused in production).",
  },
  NODE_ENV: { schema: T.Union([T.Literal("development"), T.Literal("test"), T.Literal("production")]), default: "development", doc: "development, test or production." },
  LOG_LEVEL: {
    schema: T.Union([T.Literal("debug"), T.Literal("info"), T.Literal("warn"), T.Literal("error"), T.Literal("silent")]),
    default: "info",
    doc: "Structured log level.",
  },
  SEED_DEMO: { schema: Bool, default: true, doc: "Seed the demo store and merchants on an empty database (role start). Default false and refused when NODE_ENV=production: the demo merchants share a published password; create the operator with `bun run seed` there." },
  RATE_LIMITS_ENABLED: { schema: Bool, default: true, doc: "Turn rate limits off for benchmarks (headers still sent; refused in production)." },
  LOGIN_LIMIT_PER_IP: {
    schema: T.Integer({ minimum: 1 }),
    default: 30,
    doc: "Failed password log-ins per client address per 15 min (REST, OAuth consent form and dashboard together; docs/access.md).",
  },
  LOGIN_LIMIT_PER_EMAIL: {
    schema: T.Integer({ minimum: 1 }),
    default: 100,
    doc: "Failed password log-ins per account per 15 min from addresses and browsers it never signed in from; above LOGIN_LIMIT_PER_IP.",
  },
  AGENT_KEYS_MAX_LIVE: {
    schema: T.Integer({ minimum: 1 }),
    default: 25,
    doc: "Live (unrevoked, unexpired) agent keys a merchant account may hold; one more is 409 too_many_keys (operators are not capped).",
  },
  TRUST_SCORE_PUBLIC_V41_ENABLED: { schema: Bool, default: true, doc: "Overall trust number from the v4.1 engine when it produces one." },
  TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: { schema: Bool, default: true, doc: "Component breakdown from v4.1 (needs the V41 flag too)." },
  TRUST_REFRESH_INTERVAL_MS: durationMs(1000, 6 * 60 * 60 * 1000, "Trust recompute interval (spec: 6 hours)."),
  SPEC005_KYAI_GATE_MODE: { schema: T.Union([T.Literal("observe"), T.Literal("enforce")]), default: "observe", doc: "Risk gate before settlement: observe or enforce." },
  CHECKOUT_APPROVAL_HOLD_MS: durationMs(
    60_000,
    60 * 60 * 1000,
    "How long a checkout waiting for the buyer's approval (PENDING_EXTERNAL_CONFIRMATION) keeps its stock held before it expires and the hold goes back.",
  ),
  CHECKOUT_MAX_PENDING_APPROVALS: {
    schema: T.Integer({ minimum: 1, maximum: 1000 }),
    default: 20,
    doc: "Checkouts one caller (agent key or OAuth principal) may have holding stock unpaid at once (waiting for the buyer's approval, or a payment unknown, for more than a minute: a younger hold is a payment still running); one more is refused before any hold with 429 rate_limit_exceeded, details.reason pending_approval_limit.",
  },
  SPEC005_X402_CONFIG_ENFORCED: { schema: Bool, default: false, doc: "Refuse a mismatched x402 merchant_wallet_address instead of overriding it." },
  X402_FACILITATOR_ALLOWLIST: { schema: T.String(), default: "", doc: "Comma-separated facilitator origins callers may name." },
  X402_CAPTURE_CONFIRMATIONS: {
    schema: T.Integer({ minimum: 1, maximum: 1000 }),
    default: 3,
    doc: "Blocks (the transfer's own counted) an x402 transfer must be deep before its order is paid, for stores with an rpc_url; 1 = mined. Until then the checkout answers 503 UPSTREAM_UNAVAILABLE with details.status SETTLEMENT_UNKNOWN (call again with the same idempotency_key) and the reconcile reminder pays the order once deep.",
  },
  SECRET_KEY: {
    schema: T.String(),
    default: "",
    doc: "Key-encryption key (64 hex chars) for secrets at rest: the same on every gateway and actor host of a deployment (a process whose key does not open the deployment's signing keys refuses to start). Unset: generated into DATA_DIR/secret.key with a warning.",
  },
  METRICS_PORT: {
    schema: Port,
    default: 0,
    doc: "Role `actors` only (it has no API port): port of its /metrics and /health listener (0 picks a free port, logged).",
  },
  METRICS_TOKEN: {
    // printable ASCII without whitespace: a header value is trimmed and a scrape's token is read up to the first
    // whitespace (gateway/plugins/metrics.ts), so a space, a control character or a secret file's trailing newline
    // would start fine and then refuse every scrape (review R2-4)
    schema: T.String({ minLength: 16, pattern: "^[\\x21-\\x7E]{16,}$", allowed: "a string of at least 16 printable ASCII characters, no whitespace" }),
    default: "",
    doc: "Bearer token a scrape of /metrics must send, on the API port and on an actor host's METRICS_PORT alike (Authorization: Bearer …; compared in constant time): 16+ printable ASCII characters, no whitespace (a secret file's trailing newline is refused at start-up). Unset: /metrics is open outside production and not served when NODE_ENV=production (docs/operations.md, Metrics).",
  },
  ACTOR_IDLE_MS: durationMs(100, 5 * 60 * 1000, "Idle time before an actor activation is passivated."),
  ACTOR_PARTITIONS: { schema: T.Integer({ minimum: 1, maximum: 4096 }), default: 64, doc: "Partitions per actor kind for NATS placement." },
  ACTOR_ASK_TIMEOUT_MS: durationMs(
    100,
    10_000,
    "How long an actor call that sets no deadline of its own is retried before it answers 503 actor_unavailable (tests shorten it).",
  ),
  BRIDGE_IDEMPOTENCY_LEASE_MS: durationMs(
    100,
    60_000,
    "How long an unfinished ACP/UCP/AP2 Idempotency-Key claim, and an ACP/UCP session's write claim (meanwhile 409, reason session_busy), holds before another request may take it over.",
  ),
  RETENTION_INTERVAL_MS: durationMs(
    0,
    60 * 60 * 1000,
    "How often each actor host runs the data-retention job (infra/retention.ts; docs/operations.md \"Data retention\"); 0 turns it off.",
  ),
  RETENTION_BATCH: { schema: T.Integer({ minimum: 1, maximum: 100_000 }), default: 1000, doc: "Rows per DELETE of the data-retention job (each table is emptied batch after batch)." },
  RETENTION_OAUTH_GRACE_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 1,
    doc: "Days after expiry before an OAuth refresh token is deleted, and an authorization code whose token family has no live token.",
  },
  RETENTION_CART_GRACE_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 7,
    doc: "Days after a cart's expiry before its state is deleted (carts named by an order, an AP2 mandate binding or an x402 payment are kept; an ACP/UCP session is deleted with its cart).",
  },
  RETENTION_WEBHOOK_EVENT_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 30,
    doc: "Days after dispatch before a webhook outbox event that got no delivery (no endpoint subscribed) is deleted; events with deliveries are kept.",
  },
  RETENTION_WEBHOOK_DELIVERY_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 30,
    doc: "Days after a webhook delivery finished before it and its attempt log are deleted (its event then goes once it has no delivery left): a delivered one counts from its delivery, a dead one from its last attempt (its creation if never tried), not from when it was marked dead; pending and failed deliveries are kept.",
  },
  RETENTION_BRIDGE_IDEMPOTENCY_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 7,
    doc: "Days an ACP/UCP/AP2 Idempotency-Key record is kept after its last claim's lease ended: the key replays its answer at least that long, then runs as new.",
  },
  RETENTION_RESERVATION_GRACE_DAYS: {
    schema: T.Integer({ minimum: 0 }),
    default: 7,
    doc: "Days after a stock reservation was released or given back before it is deleted, once its order is no longer pending and its cart has nothing due (held reservations and a released last attempt are kept); a committed one goes as many days after its order left paid and fulfilled (shipped, delivered, refunded, canceled), when nothing can give its units back any more.",
  },
  // At least 1 (review V1-3): a gateway judges a mandate's expiry by its own clock, the job by the database's and its
  // own; the grace is what covers a gateway clock behind them. With 0, a gateway seconds slow still took the mandate
  // as live after the job deleted the binding that refuses it for a second cart.
  RETENTION_AP2_MANDATE_GRACE_DAYS: {
    schema: T.Integer({ minimum: 1 }),
    default: 7,
    doc: "Days after an AP2 mandate stops being accepted (the first of its signed expiries: intent_expiry, cart_expiry, the user authorization's exp) before its cart binding and its agent-key claim are deleted; at least 1, since the grace covers a gateway clock behind the database's; a mandate without any expiry, and a binding recorded before migration 0087, are kept.",
  },
} as const satisfies Record<string, { schema: TSchema; default: unknown; doc: string }>;

type Vars = typeof CONFIG_VARS;
export type Config = { -readonly [K in keyof Vars]: Static<Vars[K]["schema"]> };

export class ConfigError extends Error {
  constructor(readonly variable: string, allowed: string, got: string) {
    super(`config: ${variable}=${shownValue(variable, got)} is invalid; allowed: ${allowed}`);
    this.name = "ConfigError";
  }
}

/**
 * A refused setting's value as the start-up error shows it (audit O-2: ADMIN_PASSWORD and a DATABASE_URL's password
 * reached stderr and the process manager's log): a secret's value is not shown at all, a URL only by its scheme and
 * host; every other value is quoted as it was given, so the operator sees the typo.
 */
export function shownValue(variable: string, raw: string): string {
  if (/PASSWORD|SECRET|TOKEN|(^|_)KEY$/.test(variable)) return "<hidden>";
  if (/_URLS?$/.test(variable) && variable !== "SITE_URL") {
    // SITE_URL is the public origin, shown as given; other URLs may carry credentials
    // only the scheme and host (review RD-3: a password with "@" or "/", a libpq "password=" string or a
    // ?password= parameter slipped past a credentials pattern); the scheme is what the pattern usually refuses
    try {
      const u = new URL(raw);
      // the host as parsed, only when it stands after the last "@" as written: a password starting with digits then
      // "#" or "?" is parsed into the host and port (final read RG-1)
      const shownHost = raw.indexOf(u.host, raw.lastIndexOf("@") + 1) >= 0 ? u.host : "<hidden>";
      return JSON.stringify(`${u.protocol}//${shownHost}`) + " (the rest hidden)";
    } catch {
      return `<hidden, not a URL: ${raw.length} characters>`;
    }
  }
  return JSON.stringify(raw);
}

function describe(schema: TSchema): string {
  // a schema's own wording where its pattern would say less than it means (METRICS_TOKEN)
  if (typeof schema.allowed === "string") return schema.allowed;
  if (schema.anyOf) return (schema.anyOf as TSchema[]).map((s) => String(s.const)).join(" | ");
  if (schema.type === "boolean") return "true | false";
  if (schema.type === "integer") {
    const lo = schema.minimum ?? "-inf";
    const hi = schema.maximum ?? "inf";
    return `an integer from ${lo} to ${hi}`;
  }
  if (schema.pattern) return `a string matching ${schema.pattern}`;
  if (schema.minLength) return `a string of at least ${schema.minLength} characters`;
  return "a string";
}

function coerce(schema: TSchema, raw: string): unknown {
  if (schema.type === "boolean") {
    const v = raw.trim().toLowerCase();
    if (["true", "1", "yes", "on"].includes(v)) return true;
    if (["false", "0", "no", "off"].includes(v)) return false;
    return raw;
  }
  if (schema.type === "integer") return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  return raw;
}

/** Reads and validates the configuration. `env` defaults to process.env; tests pass their own. */
/**
 * SITE_URL without trailing slashes: links are built as SITE_URL + "/path", so a trailing slash published `//` links
 * (the trust score's jwks_url, the MCP endpoint, the x402 resource) and a token/JWS `iss` a verifier pinning the
 * origin refuses (audit B-6). Applied by loadConfig and again by boot to a config given in code.
 */
export const normalizeSiteUrl = (url: string): string => url.replace(/\/+$/, "");

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(CONFIG_VARS) as [string, { schema: TSchema; default: unknown }][]) {
    const raw = env[name];
    if (raw === undefined || raw === "") {
      out[name] = spec.default;
      continue;
    }
    const value = coerce(spec.schema, raw);
    if (!Value.Check(spec.schema, value)) throw new ConfigError(name, describe(spec.schema), raw);
    out[name] = value;
  }
  const config = out as Config;
  config.SITE_URL = normalizeSiteUrl(config.SITE_URL);
  if (config.NODE_ENV === "production") {
    if (!config.RATE_LIMITS_ENABLED) throw new ConfigError("RATE_LIMITS_ENABLED", "true when NODE_ENV=production", "false");
    if (env.ALLOW_PRIVATE_URLS === undefined) config.ALLOW_PRIVATE_URLS = false;
    else if (config.ALLOW_PRIVATE_URLS) throw new ConfigError("ALLOW_PRIVATE_URLS", "false when NODE_ENV=production", "true");
    // the demo merchants' accounts share a published password (audit M-5): never seeded into a production database;
    // the operator comes from `bun run seed` there (docs/operations.md "Start order")
    if (env.SEED_DEMO === undefined) config.SEED_DEMO = false;
    else if (config.SEED_DEMO) throw new ConfigError("SEED_DEMO", "false when NODE_ENV=production (the demo merchants share a published password)", "true");
  }
  // one address alone must not be able to fill an account's bucket (docs/access.md, log-in buckets)
  if (config.LOGIN_LIMIT_PER_EMAIL <= config.LOGIN_LIMIT_PER_IP) {
    throw new ConfigError("LOGIN_LIMIT_PER_EMAIL", `an integer above LOGIN_LIMIT_PER_IP (${config.LOGIN_LIMIT_PER_IP})`, String(config.LOGIN_LIMIT_PER_EMAIL));
  }
  if (config.SECRET_KEY && !/^[0-9a-fA-F]{64}$/.test(config.SECRET_KEY)) {
    throw new ConfigError("SECRET_KEY", "64 hexadecimal characters (32 bytes)", config.SECRET_KEY); // shown as <hidden>
  }
  return config;
}

/**
 * Checks that depend on the process's role (`bun gateway/main.ts start|gateway|actors`). A gateway signs bearer and
 * OAuth tokens with `iss` = SITE_URL and accepts only that issuer, so every gateway of one deployment must share one
 * SITE_URL (the public origin behind the balancer). Its default, http://HOST:PORT, differs per gateway: a token from
 * one gateway was refused by the others (audit D-3). The actor hosts sign the trust score JWS with `iss` = SITE_URL
 * too (review R4-1): their default would name the host itself. With NATS_URL set there may be several processes of
 * either role, so production refuses to guess, on every role.
 */
export function checkRoleConfig(config: Config, role: "start" | "gateway" | "actors"): void {
  // A second `start` process on the port would host a second copy of every actor over its own in-process bus: two
  // writers of one cart or store. Only gateways, which own no state, may share a port; an actor host has no API port
  // (a deployment's one env file may set it for every role).
  if (config.REUSE_PORT && role === "start") {
    throw new ConfigError("REUSE_PORT", "false on role start (only gateway processes, which hold no actor, may share a port: run gateways with role gateway and actor hosts with role actors)", "true");
  }
  if (config.REUSE_PORT && role === "gateway" && config.PORT === 0) {
    throw new ConfigError("REUSE_PORT", "false with PORT=0 (each process would pick its own free port: nothing is shared)", "true");
  }
  if (config.NODE_ENV === "production" && config.NATS_URL && !config.SITE_URL) {
    throw new ConfigError(
      "SITE_URL",
      "the deployment's public origin, the same on every gateway and actor host (required when NODE_ENV=production and NATS_URL is set: tokens and trust scores carry it as their issuer, and a gateway accepts only its own)",
      "",
    );
  }
}

/** True when the dev-only admin credentials are in use (start-up warns about it in production). */
export function usesDefaultAdminCredentials(config: Config): boolean {
  return config.ADMIN_EMAIL === CONFIG_VARS.ADMIN_EMAIL.default || config.ADMIN_PASSWORD === CONFIG_VARS.ADMIN_PASSWORD.default;
}
