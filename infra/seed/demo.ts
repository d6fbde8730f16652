/**
 * The deterministic demo seed. `buildDemoData(seed, opts)` is pure (same seed + same `now` → deep-equal data,
 * and ids never depend on `now`); `seedDemo(sql, opts)` inserts it in one transaction, only when no store exists
 * yet, under a transaction-scoped advisory lock so concurrent callers insert exactly once.
 */
import type postgres from "postgres";
import type { Coupon, ProductRecord, ShippingZone, StoreRecord } from "../../actors/store/schemas.ts";
import { productToRow } from "../../actors/store/schemas.ts";
import { categoryByName, generateProduct, type ProductContext } from "./catalog.ts";
import { DEMO_STORE_SLUG, MERCHANTS, SHARED_ITEMS, type MerchantSpec, type ZoneRegion } from "./merchants.ts";
import { makeGtin13, Rng, sha256Hex, stableUuid } from "./prng.ts";
import { hashPassword } from "../passwords.ts";

export { DEMO_STORE_SLUG, MERCHANTS, SHARED_ITEMS } from "./merchants.ts";

/** The default seed: ids in docs and tests are derived from it. */
export const DEMO_SEED = 20250601;
export const DEFAULT_ADMIN_EMAIL = "admin@example.com";
/** Dev-only credentials, documented in docs/data-model.md. Never use these outside local development. */
export const DEFAULT_ADMIN_PASSWORD = "admin-password";
export const DEV_MERCHANT_PASSWORD = "merchant-password";
/** Arbitrary constant naming the seed's advisory lock. */
export const SEED_LOCK_ID = 727_020;

const DAY = 86_400_000;
const HOUR = 3_600_000;

export type OrderChannel = "agent" | "human";
export type OrderStatus = "pending" | "paid" | "fulfilled" | "shipped" | "delivered" | "canceled" | "refunded";

export interface SeedUser {
  id: string;
  email: string;
  role: "operator" | "merchant";
  /** Plaintext dev password; hashed (argon2id) only when inserted. */
  password: string;
}

export interface SeedPricePoint {
  productId: string;
  priceMinor: number;
  currency: string;
  recordedAt: string;
}

export interface SeedOrder {
  id: string;
  storeSlug: string;
  channel: OrderChannel;
  agentKeyId: string | null;
  buyerRef: string;
  status: OrderStatus;
  totalMinor: number;
  currency: string;
  paymentRail: string;
  fulfilledOnTime: boolean | null;
  disputed: boolean;
  refundedMinor: number;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface SeedOrderItem {
  orderId: string;
  productId: string;
  variantId: string | null;
  title: string;
  quantity: number;
  unitPriceMinor: number;
}

export interface SeedOrderEvent {
  orderId: string;
  at: string;
  type: string;
  fromStatus: OrderStatus | null;
  toStatus: OrderStatus | null;
  data: Record<string, unknown>;
}

export interface DemoData {
  seed: number;
  now: string;
  users: SeedUser[];
  stores: StoreRecord[];
  products: ProductRecord[];
  priceHistory: SeedPricePoint[];
  shippingZones: ShippingZone[];
  coupons: Coupon[];
  orders: SeedOrder[];
  orderItems: SeedOrderItem[];
  orderEvents: SeedOrderEvent[];
}

export interface BuildDemoOptions {
  /** Reference time for every timestamp (default: now). Ids never depend on it. */
  now?: Date;
  adminEmail?: string;
  adminPassword?: string;
  merchantPassword?: string;
}

const idSpace = (seed: number) => `demo:${seed}`;

/** The id the demo seed gives a product: stable for a (seed, store, external id). */
export function demoProductId(storeSlug: string, externalId: string, seed = DEMO_SEED): string {
  return stableUuid(idSpace(seed), "product", storeSlug, externalId);
}

export function demoExternalId(spec: Pick<MerchantSpec, "prefix">, index: number): string {
  return `${spec.prefix}-${String(index + 1).padStart(4, "0")}`;
}

/** Ids of the "historical agents" that placed the seeded agent orders (not rows of any agent-key table). */
export function historicalAgentKeyIds(seed = DEMO_SEED): string[] {
  return Array.from({ length: 8 }, (_, i) => stableUuid(idSpace(seed), "agent-key", i));
}

export function ownerEmail(slug: string): string {
  return `owner@${slug}.example`;
}

// ---------------------------------------------------------------------------------------------------------------

export function buildDemoData(seed: number = DEMO_SEED, opts: BuildDemoOptions = {}): DemoData {
  const now = opts.now ?? new Date();
  const ids = idSpace(seed);
  const root = new Rng(seed);

  const admin: SeedUser = {
    id: stableUuid(ids, "user", "admin"),
    email: opts.adminEmail ?? DEFAULT_ADMIN_EMAIL,
    role: "operator",
    password: opts.adminPassword ?? DEFAULT_ADMIN_PASSWORD,
  };
  const users: SeedUser[] = [admin];
  const data: DemoData = {
    seed,
    now: now.toISOString(),
    users,
    stores: [],
    products: [],
    priceHistory: [],
    shippingZones: [],
    coupons: [],
    orders: [],
    orderItems: [],
    orderEvents: [],
  };

  const sharedGtins = new Map(SHARED_ITEMS.map((s) => [s.key, makeGtin13(root.fork(`gtin:${s.key}`), "084")]));
  const agentKeys = historicalAgentKeyIds(seed);

  for (const spec of MERCHANTS) {
    const rng = root.fork(`merchant:${spec.slug}`);
    let ownerUserId = admin.id;
    if (spec.slug !== DEMO_STORE_SLUG) {
      const owner: SeedUser = {
        id: stableUuid(ids, "user", spec.slug),
        email: ownerEmail(spec.slug),
        role: "merchant",
        password: opts.merchantPassword ?? DEV_MERCHANT_PASSWORD,
      };
      users.push(owner);
      ownerUserId = owner.id;
    }
    const store = buildStore(spec, ownerUserId, now);
    data.stores.push(store);

    const products = buildProducts(rng.fork("products"), spec, ids, now, new Date(store.lastSyncAt!), sharedGtins);
    data.products.push(...products);
    for (const p of products) data.priceHistory.push(...priceHistoryFor(rng.fork(`price:${p.externalId}`), p, now));
    data.shippingZones.push(...zonesFor(spec, ids));
    data.coupons.push(...couponsFor(spec, ids, now));
    buildOrders(rng.fork("orders"), spec, products, ids, now, agentKeys, data);
  }
  return data;
}

function buildStore(spec: MerchantSpec, ownerUserId: string, now: Date): StoreRecord {
  const createdAt = new Date(now.getTime() - spec.ageDays * DAY).toISOString();
  const lastSync = new Date(now.getTime() - spec.syncAgeMinutes * 60_000).toISOString();
  return {
    slug: spec.slug,
    name: spec.name,
    ownerUserId,
    verificationLevel: spec.level,
    country: spec.country,
    euBased: spec.euBased,
    currency: spec.currency,
    platform: spec.platform,
    hostedStorefront: spec.hosted,
    trustScore: spec.trust,
    operationalStatus: spec.status,
    lastSyncAt: lastSync,
    policies: spec.policies,
    policyVersion: 1,
    paymentMethods: spec.paymentMethods,
    enabledMcpTools: null,
    negotiationRules: spec.negotiation,
    reviewRatingAvg: spec.review ? spec.review[0] : null,
    reviewCount: spec.review ? spec.review[1] : 0,
    version: 0,
    createdAt,
    updatedAt: lastSync,
  };
}

function buildProducts(
  rng: Rng,
  spec: MerchantSpec,
  ids: string,
  now: Date,
  syncedAt: Date,
  sharedGtins: Map<string, string>,
): ProductRecord[] {
  const out: ProductRecord[] = [];
  const ctxFor = (index: number, category: string): ProductContext => ({
    idSpace: ids,
    storeSlug: spec.slug,
    externalId: demoExternalId(spec, index),
    currency: spec.currency,
    category: categoryByName(category),
    quality: spec.quality,
    now,
    syncedAt,
  });
  // Shared (near-duplicate) items first, so DS-0001 … DS-0008 are always the same items.
  for (const item of SHARED_ITEMS) {
    const title = item.titles[spec.slug];
    if (!title) continue;
    const r = rng.fork(`shared:${item.key}`);
    const sloppy = spec.quality.missingGtinRate >= 0.3;
    out.push(
      generateProduct(r, ctxFor(out.length, item.category), {
        title,
        brand: item.brand,
        templateNoun: item.templateNoun,
        // Each store prices the same item a little differently.
        baseUsd: item.baseUsd * r.range(0.93, 1.08),
        gtin: sloppy ? null : sharedGtins.get(item.key)!,
        active: true,
      }),
    );
  }
  let i = 0;
  while (out.length < spec.products) {
    const category = spec.categories[i % spec.categories.length]!;
    const r = rng.fork(`p:${out.length}`);
    const p = generateProduct(r, ctxFor(out.length, category));
    if (r.chance(0.02)) p.active = false;
    out.push(p);
    i++;
  }
  return out;
}

/** A row for the first sighting ~90 days ago, then 0-4 price changes, the last one being today's price. */
function priceHistoryFor(rng: Rng, p: ProductRecord, now: Date): SeedPricePoint[] {
  const start = Math.max(new Date(p.createdAt).getTime(), now.getTime() - 90 * DAY);
  const changes = rng.int(0, 4);
  const span = now.getTime() - start;
  const times = Array.from({ length: changes }, () => start + Math.floor(rng.range(0.05, 0.98) * span)).sort((a, b) => a - b);
  const point = (at: number, price: number): SeedPricePoint => ({
    productId: p.id,
    priceMinor: price,
    currency: p.currency,
    recordedAt: new Date(at).toISOString(),
  });
  if (changes === 0) return [point(start, p.priceMinor)];
  const points = [point(start, Math.max(1, Math.round((p.priceMinor * rng.range(0.88, 1.15)) / 100) * 100 - 1))];
  times.forEach((at, idx) => {
    const last = idx === times.length - 1;
    const price = last ? p.priceMinor : Math.max(1, Math.round((p.priceMinor * rng.range(0.85, 1.15)) / 100) * 100 - 1);
    points.push(point(at, price));
  });
  return points;
}

function zonesFor(spec: MerchantSpec, ids: string): ShippingZone[] {
  const threshold = spec.policies.freeShippingThresholdMinor ?? null;
  const z = (
    name: string,
    countries: string[],
    postalPrefixes: string[],
    baseMinor: number,
    perItemMinor: number,
    freeOverMinor: number | null,
    minDays: number,
    maxDays: number,
  ): ShippingZone => ({
    id: stableUuid(ids, "zone", spec.slug, name),
    storeSlug: spec.slug,
    name,
    countries,
    postalPrefixes,
    currency: spec.currency,
    baseMinor,
    perItemMinor,
    freeOverMinor,
    minDays,
    maxDays,
  });
  const byRegion: Record<ZoneRegion, ShippingZone[]> = {
    US: [
      z("Contiguous US", ["US"], [], 599, 100, threshold, 3, 5),
      z("Alaska & Hawaii", ["US"], ["995", "996", "997", "998", "999", "967", "968"], 1999, 200, null, 6, 10),
      z("Canada", ["CA"], [], 1499, 200, null, 5, 9),
      z("International", ["GB", "DE", "FR", "NL", "IE", "AU", "JP"], [], 2999, 300, null, 7, 14),
    ],
    EU: [
      z("Germany", ["DE"], [], 490, 0, threshold, 1, 3),
      z("European Union", ["AT", "BE", "FR", "IT", "NL", "ES", "PL", "DK", "SE", "IE", "PT", "FI", "LU"], [], 990, 100, 10000, 3, 6),
      z("UK & Switzerland", ["GB", "CH"], [], 1490, 150, null, 4, 8),
    ],
    UK: [
      z("UK Mainland", ["GB"], [], 395, 0, threshold, 1, 3),
      z("Highlands & Islands", ["GB"], ["HS", "ZE", "KW", "IV", "PA", "PH"], 995, 100, null, 3, 6),
      z("Europe", ["DE", "FR", "IE", "NL", "BE", "ES", "IT"], [], 1295, 150, null, 4, 8),
    ],
  };
  const zones = byRegion[spec.zones];
  return spec.expressShipping ? [...zones, z("Express", [spec.country], [], 1999, 300, null, 1, 2)] : zones;
}

function couponsFor(spec: MerchantSpec, ids: string, now: Date): Coupon[] {
  return spec.coupons.map((c) => ({
    id: stableUuid(ids, "coupon", spec.slug, c.code),
    storeSlug: spec.slug,
    code: c.code,
    kind: c.kind,
    value: c.value,
    minSpendMinor: c.minSpendMinor ?? 0,
    currency: c.kind === "fixed" ? spec.currency : null,
    expiresAt: c.expiresInDays === undefined ? null : new Date(now.getTime() + c.expiresInDays * DAY).toISOString(),
    usageLimit: c.usageLimit ?? null,
    usedCount: c.usedCount ?? 0,
    active: true,
  }));
}

interface PlannedEvent {
  at: number;
  type: string;
  to: OrderStatus | null;
  data: Record<string, unknown>;
}

/**
 * Order histories over the last 180 days: 65 % of each channel's orders fall in the trailing 90 days (the window
 * the trust tiers use), and the first orders in that window each get a distinct buyer so unique-buyer counts are
 * predictable. Lifecycles are planned in full, then cut at `now`, so recent orders are still pending or in transit.
 */
function buildOrders(
  rng: Rng,
  spec: MerchantSpec,
  products: ProductRecord[],
  ids: string,
  now: Date,
  agentKeys: string[],
  data: DemoData,
): void {
  const sellable = products.filter((p) => p.active);
  const profile = spec.orders;
  const nowMs = now.getTime();

  for (const channel of ["human", "agent"] as const) {
    const count = channel === "human" ? profile.human : profile.agent;
    const pool = Math.max(1, channel === "human" ? profile.humanBuyers : profile.agentBuyers);
    const recent = Math.round(count * 0.65);
    for (let i = 0; i < count; i++) {
      const r = rng.fork(`${channel}:${i}`);
      const id = stableUuid(ids, "order", spec.slug, channel, i);
      const ageMs = i < recent ? r.range(0.1, 89.5) * DAY : r.range(90.5, 179.5) * DAY;
      const created = nowMs - Math.floor(ageMs);
      const buyer = i < pool ? i : r.int(0, pool - 1);
      const buyerRef = sha256Hex(`${ids}:buyer:${spec.slug}:${channel}:${buyer}`);

      // Items.
      const lines = r.sample(sellable, r.weighted([[1, 6], [2, 3], [3, 1]] as const));
      let total = 0;
      for (const p of lines) {
        const quantity = r.weighted([[1, 8], [2, 2], [3, 1]] as const);
        const variant = p.variants.length ? r.pick(p.variants) : null;
        data.orderItems.push({
          orderId: id,
          productId: p.id,
          variantId: variant?.id ?? null,
          title: variant ? `${p.title} (${variant.title})` : p.title,
          quantity,
          unitPriceMinor: p.priceMinor,
        });
        total += p.priceMinor * quantity;
      }

      const rail =
        channel === "agent" && spec.paymentMethods.includes("MOCK")
          ? r.chance(profile.x402Share) ? "x402" : "MOCK"
          : channel === "agent" && spec.paymentMethods.includes("x402") && r.chance(profile.x402Share)
            ? "x402"
            : "card";

      // Plan the whole lifecycle.
      const plan: PlannedEvent[] = [{ at: created, type: "created", to: "pending", data: { items: lines.length } }];
      let onTime: boolean | null = null;
      if (r.chance(profile.cancel)) {
        const paidFirst = r.chance(0.5);
        if (paidFirst) plan.push({ at: created + r.int(1, 10) * 60_000, type: "paid", to: "paid", data: { rail } });
        plan.push({ at: created + r.range(1, 20) * HOUR, type: "canceled", to: "canceled", data: { reason: r.pick(["buyer_request", "out_of_stock", "payment_review"]) } });
      } else {
        const paid = created + r.int(1, 10) * 60_000;
        plan.push({ at: paid, type: "paid", to: "paid", data: { rail } });
        onTime = r.chance(profile.onTime);
        const fulfilled = created + (onTime ? r.range(0.2, 1.9) : r.range(2.2, 7)) * DAY;
        plan.push({ at: fulfilled, type: "fulfilled", to: "fulfilled", data: {} });
        const shipped = fulfilled + r.range(1, 12) * HOUR;
        plan.push({ at: shipped, type: "shipped", to: "shipped", data: { carrier: r.pick(["UPS", "USPS", "FedEx", "DHL"]) } });
        const delivered = shipped + r.range(1.5, 6) * DAY;
        plan.push({ at: delivered, type: "delivered", to: "delivered", data: {} });
        if (r.chance(profile.dispute)) {
          plan.push({ at: delivered + r.range(3, 20) * DAY, type: "dispute_opened", to: null, data: { reason: r.pick(["not_as_described", "not_received", "damaged"]) } });
        }
        if (r.chance(profile.refund)) {
          plan.push({ at: delivered + r.range(2, 14) * DAY, type: "refunded", to: "refunded", data: { amountMinor: total } });
        } else if (r.chance(profile.partialRefund) && total > 100) {
          const amountMinor = Math.round(total * r.range(0.1, 0.5));
          plan.push({ at: delivered + r.range(2, 14) * DAY, type: "partial_refund", to: null, data: { amountMinor } });
        }
      }
      plan.sort((a, b) => a.at - b.at);
      const happened = plan.filter((e) => e.at <= nowMs);

      let status: OrderStatus = "pending";
      let refunded = 0;
      let disputed = false;
      let fulfilledSeen = false;
      for (const e of happened) {
        data.orderEvents.push({
          orderId: id,
          at: new Date(e.at).toISOString(),
          type: e.type,
          fromStatus: e.type === "created" ? null : e.to ? status : null,
          toStatus: e.to,
          data: e.data,
        });
        if (e.to) status = e.to;
        if (e.type === "fulfilled") fulfilledSeen = true;
        if (e.type === "refunded" || e.type === "partial_refund") refunded = e.data.amountMinor as number;
        if (e.type === "dispute_opened") disputed = true;
      }

      data.orders.push({
        id,
        storeSlug: spec.slug,
        channel,
        agentKeyId: channel === "agent" ? r.pick(agentKeys) : null,
        buyerRef,
        status,
        totalMinor: total,
        currency: spec.currency,
        paymentRail: rail,
        fulfilledOnTime: fulfilledSeen ? onTime : null,
        disputed,
        refundedMinor: refunded,
        createdAt: new Date(created).toISOString(),
        updatedAt: new Date(happened[happened.length - 1]!.at).toISOString(),
        version: happened.length - 1,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Insertion

type AnySql = postgres.Sql<{}> | postgres.TransactionSql<{}>;

/**
 * Inserts JSON rows through `jsonb_populate_recordset`, which casts every field to the table's column type
 * (arrays, jsonb, timestamps) in one round trip per batch.
 */
export async function insertJsonRows(
  sql: AnySql,
  table: string,
  columns: readonly string[],
  rows: ReadonlyArray<Record<string, unknown>>,
  opts: { batchSize?: number; onConflict?: string } = {},
): Promise<void> {
  const batchSize = opts.batchSize ?? 1000;
  const cols = columns.map((c) => `"${c}"`).join(", ");
  const text =
    `INSERT INTO "${table}" (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::"${table}", $1::text::jsonb)` +
    (opts.onConflict ? ` ${opts.onConflict}` : "");
  for (let i = 0; i < rows.length; i += batchSize) {
    await sql.unsafe(text, [JSON.stringify(rows.slice(i, i + batchSize))]);
  }
}

export const PRODUCT_COLUMNS = [
  "id", "store_slug", "external_id", "title", "description", "brand", "category", "tags", "gtin", "price_minor",
  "compare_at_price_minor", "currency", "stock_quantity", "in_stock", "images", "variants", "attributes", "active",
  "created_at", "updated_at", "synced_at",
] as const;

export const STORE_COLUMNS = [
  "slug", "name", "owner_user_id", "verification_level", "country", "eu_based", "currency", "platform",
  "hosted_storefront", "trust_score", "operational_status", "last_sync_at", "policies", "policy_version",
  "payment_methods", "enabled_mcp_tools", "negotiation_rules", "review_rating_avg", "review_count", "version",
  "created_at", "updated_at",
] as const;

export function storeToRow(s: StoreRecord): Record<(typeof STORE_COLUMNS)[number], unknown> {
  return {
    slug: s.slug,
    name: s.name,
    owner_user_id: s.ownerUserId,
    verification_level: s.verificationLevel,
    country: s.country,
    eu_based: s.euBased,
    currency: s.currency,
    platform: s.platform,
    hosted_storefront: s.hostedStorefront,
    trust_score: s.trustScore,
    operational_status: s.operationalStatus,
    last_sync_at: s.lastSyncAt,
    policies: s.policies,
    policy_version: s.policyVersion,
    payment_methods: s.paymentMethods,
    enabled_mcp_tools: s.enabledMcpTools,
    negotiation_rules: s.negotiationRules,
    review_rating_avg: s.reviewRatingAvg,
    review_count: s.reviewCount,
    version: s.version,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
}

export interface SeedDemoOptions extends BuildDemoOptions {
  seed?: number;
}

export interface SeedCounts {
  users: number;
  stores: number;
  products: number;
  priceHistory: number;
  shippingZones: number;
  coupons: number;
  orders: number;
  orderItems: number;
  orderEvents: number;
}

export interface SeedDemoResult {
  /** false when the database already had stores (nothing was written). */
  inserted: boolean;
  counts: SeedCounts;
}

const ZERO: SeedCounts = {
  users: 0, stores: 0, products: 0, priceHistory: 0, shippingZones: 0, coupons: 0, orders: 0, orderItems: 0, orderEvents: 0,
};

/**
 * Seeds the demo data unless the database already has a store. Safe to call from several processes at once:
 * the first transaction to take the advisory lock inserts, the others then see its stores and do nothing.
 * Users whose e-mail already exists are kept (their id becomes the store owner).
 */
export async function seedDemo(sql: postgres.Sql<{}>, opts: SeedDemoOptions = {}): Promise<SeedDemoResult> {
  // Cheap pre-check so a normal start-up does not build data or hash passwords for nothing.
  const [pre] = await sql<{ exists: boolean }[]>`SELECT EXISTS (SELECT 1 FROM stores) AS exists`;
  if (pre?.exists) return { inserted: false, counts: ZERO };

  const data = buildDemoData(opts.seed ?? DEMO_SEED, opts);
  // Argon2id is slow on purpose: hash before taking the lock, once per distinct password. Through hashPassword, so
  // a seeded account costs what the login's dummy hash costs (else response times tell which e-mails exist).
  const hashes = new Map<string, string>();
  for (const pw of new Set(data.users.map((u) => u.password))) hashes.set(pw, await hashPassword(pw));

  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${SEED_LOCK_ID})`;
    const [again] = await tx<{ exists: boolean }[]>`SELECT EXISTS (SELECT 1 FROM stores) AS exists`;
    if (again?.exists) return { inserted: false, counts: ZERO };

    await insertJsonRows(
      tx,
      "users",
      ["id", "email", "password_hash", "role"],
      data.users.map((u) => ({ id: u.id, email: u.email, password_hash: hashes.get(u.password), role: u.role })),
      { onConflict: "ON CONFLICT (email) DO NOTHING" },
    );
    const emails = data.users.map((u) => u.email);
    const existing = await tx<{ id: string; email: string }[]>`SELECT id, email FROM users WHERE email = ANY(${emails})`;
    const idByEmail = new Map(existing.map((r) => [r.email, r.id]));
    const seededIdToActual = new Map(data.users.map((u) => [u.id, idByEmail.get(u.email) ?? u.id]));

    const stores = data.stores.map((s) => storeToRow({ ...s, ownerUserId: s.ownerUserId ? seededIdToActual.get(s.ownerUserId) ?? null : null }));
    await insertJsonRows(tx, "stores", STORE_COLUMNS, stores);
    await insertJsonRows(tx, "products", PRODUCT_COLUMNS, data.products.map((p) => productToRow(p) as unknown as Record<string, unknown>));
    await insertJsonRows(
      tx,
      "product_price_history",
      ["product_id", "price_minor", "currency", "recorded_at"],
      data.priceHistory.map((h) => ({ product_id: h.productId, price_minor: h.priceMinor, currency: h.currency, recorded_at: h.recordedAt })),
      { batchSize: 5000 },
    );
    await insertJsonRows(
      tx,
      "shipping_zones",
      ["id", "store_slug", "name", "countries", "postal_prefixes", "currency", "base_minor", "per_item_minor", "free_over_minor", "min_days", "max_days"],
      data.shippingZones.map((z) => ({
        id: z.id, store_slug: z.storeSlug, name: z.name, countries: z.countries, postal_prefixes: z.postalPrefixes,
        currency: z.currency, base_minor: z.baseMinor, per_item_minor: z.perItemMinor, free_over_minor: z.freeOverMinor,
        min_days: z.minDays, max_days: z.maxDays,
      })),
    );
    await insertJsonRows(
      tx,
      "coupons",
      ["id", "store_slug", "code", "kind", "value", "min_spend_minor", "currency", "expires_at", "usage_limit", "used_count", "active"],
      data.coupons.map((c) => ({
        id: c.id, store_slug: c.storeSlug, code: c.code, kind: c.kind, value: c.value, min_spend_minor: c.minSpendMinor,
        currency: c.currency, expires_at: c.expiresAt, usage_limit: c.usageLimit, used_count: c.usedCount, active: c.active,
      })),
    );
    await insertJsonRows(
      tx,
      "orders",
      ["id", "store_slug", "channel", "agent_key_id", "buyer_ref", "status", "total_minor", "currency", "payment_rail", "fulfilled_on_time", "disputed", "refunded_minor", "created_at", "updated_at", "version"],
      data.orders.map((o) => ({
        id: o.id, store_slug: o.storeSlug, channel: o.channel, agent_key_id: o.agentKeyId, buyer_ref: o.buyerRef,
        status: o.status, total_minor: o.totalMinor, currency: o.currency, payment_rail: o.paymentRail,
        fulfilled_on_time: o.fulfilledOnTime, disputed: o.disputed, refunded_minor: o.refundedMinor,
        created_at: o.createdAt, updated_at: o.updatedAt, version: o.version,
      })),
    );
    await insertJsonRows(
      tx,
      "order_items",
      ["order_id", "product_id", "variant_id", "title", "quantity", "unit_price_minor"],
      data.orderItems.map((i) => ({
        order_id: i.orderId, product_id: i.productId, variant_id: i.variantId, title: i.title, quantity: i.quantity,
        unit_price_minor: i.unitPriceMinor,
      })),
      { batchSize: 5000 },
    );
    await insertJsonRows(
      tx,
      "order_events",
      ["order_id", "at", "type", "from_status", "to_status", "data"],
      data.orderEvents.map((e) => ({ order_id: e.orderId, at: e.at, type: e.type, from_status: e.fromStatus, to_status: e.toStatus, data: e.data })),
      { batchSize: 5000 },
    );

    const counts: SeedCounts = {
      users: data.users.length,
      stores: data.stores.length,
      products: data.products.length,
      priceHistory: data.priceHistory.length,
      shippingZones: data.shippingZones.length,
      coupons: data.coupons.length,
      orders: data.orders.length,
      orderItems: data.orderItems.length,
      orderEvents: data.orderEvents.length,
    };
    return { inserted: true, counts };
  });
}
