/**
 * Large synthetic catalogs for benchmarks and search load: M merchants (`synth-0001` …) and N products spread
 * evenly over them, streamed with COPY in chunks while the next chunk is generated. Deterministic like the demo seed (ids from `synthetic:<seed>`), and re-runnable:
 * existing stores and products are left alone (ON CONFLICT DO NOTHING).
 */
import type postgres from "postgres";
import type { ProductRow, StoreRecord, VerificationLevel } from "../../actors/store/schemas.ts";
import { productToRow } from "../../actors/store/schemas.ts";
import { CATEGORIES, GOOD_QUALITY, generateProduct } from "./catalog.ts";
import { insertJsonRows, PRODUCT_COLUMNS, STORE_COLUMNS, storeToRow } from "./demo.ts";
import { copyLine } from "./copy.ts";
import { Rng } from "./prng.ts";

export interface SyntheticOptions {
  products: number;
  merchants: number;
  seed?: number;
  /** Rows per COPY chunk (default 5000). */
  batchSize?: number;
  now?: Date;
  onProgress?: (done: number, total: number) => void;
}

export interface SyntheticResult {
  merchants: number;
  /** Products generated and sent (rows that already existed are skipped by the database). */
  products: number;
  seconds: number;
  productsPerSecond: number;
}

export const SYNTHETIC_SEED = 42;
const LEVELS: VerificationLevel[] = ["BASIC", "STANDARD", "PREMIUM", "QUALIFIED"];

export function syntheticSlug(i: number): string {
  return `synth-${String(i + 1).padStart(4, "0")}`;
}

/** The merchants of a synthetic run (pure). All are visible: BASIC+ and trust 0.5..0.95. */
export function buildSyntheticStores(merchants: number, seed = SYNTHETIC_SEED, now = new Date()): StoreRecord[] {
  const root = new Rng(seed).fork("synthetic-stores");
  return Array.from({ length: merchants }, (_, i) => {
    const r = root.fork(String(i));
    const level = LEVELS[i % LEVELS.length]!;
    const eu = level === "QUALIFIED";
    const iso = now.toISOString();
    return {
      slug: syntheticSlug(i),
      name: `Synthetic Merchant ${i + 1}`,
      ownerUserId: null,
      verificationLevel: level,
      country: eu ? "NL" : "US",
      euBased: eu,
      currency: eu ? "EUR" : "USD",
      platform: r.pick(["custom", "shopify-like hosted", "woocommerce-like"]),
      hostedStorefront: r.chance(0.5),
      trustScore: Math.round(r.range(0.5, 0.95) * 1000) / 1000,
      operationalStatus: "active",
      lastSyncAt: new Date(now.getTime() - r.int(1, 720) * 60_000).toISOString(),
      policies: { acceptsReturns: true, returnWindowDays: r.pick([14, 30, 60]), shippingEstimateDays: "3-5" },
      policyVersion: 1,
      paymentMethods: ["card"],
      enabledMcpTools: null,
      negotiationRules: null,
      reviewRatingAvg: Math.round(r.range(3.5, 4.9) * 10) / 10,
      reviewCount: r.int(10, 5000),
      version: 0,
      createdAt: iso,
      updatedAt: iso,
    };
  });
}

export async function seedSynthetic(sql: postgres.Sql<{}>, opts: SyntheticOptions): Promise<SyntheticResult> {
  const seed = opts.seed ?? SYNTHETIC_SEED;
  const now = opts.now ?? new Date();
  const batchSize = Math.max(1, opts.batchSize ?? 5000);
  if (!Number.isInteger(opts.products) || opts.products < 0) throw new Error("products must be a non-negative integer");
  if (!Number.isInteger(opts.merchants) || opts.merchants < 1) throw new Error("merchants must be a positive integer");

  const started = performance.now();
  const stores = buildSyntheticStores(opts.merchants, seed, now);
  await insertJsonRows(sql, "stores", STORE_COLUMNS, stores.map(storeToRow), { onConflict: "ON CONFLICT (slug) DO NOTHING" });

  const idSpace = `synthetic:${seed}`;
  const root = new Rng(seed).fork("synthetic-products");
  const perStore = Math.ceil(opts.products / opts.merchants);
  const rowFor = (n: number): ProductRow => {
    const store = stores[Math.floor(n / perStore)]!;
    const p = generateProduct(root.fork(String(n)), {
      idSpace,
      storeSlug: store.slug,
      externalId: `SYN-${String(n + 1).padStart(8, "0")}`,
      currency: store.currency,
      category: CATEGORIES[n % CATEGORIES.length]!,
      quality: GOOD_QUALITY,
      now,
      syncedAt: new Date(store.lastSyncAt!),
    });
    return productToRow(p);
  };

  // COPY into a session temp table, then INSERT … ON CONFLICT DO NOTHING so a re-run (or an interrupted one)
  // skips what exists. Postgres works on chunk k while we generate chunk k+1.
  const conn = await sql.reserve();
  let done = 0;
  try {
    await conn.unsafe(`CREATE TEMP TABLE IF NOT EXISTS synth_staging (LIKE products INCLUDING DEFAULTS)`);
    await conn.unsafe(`TRUNCATE synth_staging`);
    const cols = PRODUCT_COLUMNS.map((c) => `"${c}"`).join(", ");
    let pending: Promise<void> | null = null;
    for (let start = 0; start < opts.products; start += batchSize) {
      const end = Math.min(start + batchSize, opts.products);
      const parts: string[] = [];
      for (let n = start; n < end; n++) {
        parts.push(copyLine(rowFor(n)));
        // Yield now and then so the socket keeps draining the previous chunk while we generate.
        if ((n - start) % 500 === 499) await new Promise<void>((r) => setImmediate(r));
      }
      const text = parts.join("");
      const count = end - start;
      if (pending) await pending;
      pending = (async () => {
        const w = await conn.unsafe(`COPY synth_staging (${cols}) FROM STDIN`).writable();
        await new Promise<void>((resolve, reject) => {
          w.on("error", reject);
          w.on("finish", () => resolve());
          w.end(text);
        });
        await conn.unsafe(`INSERT INTO products (${cols}) SELECT ${cols} FROM synth_staging ON CONFLICT (store_slug, external_id) DO NOTHING`);
        await conn.unsafe(`TRUNCATE synth_staging`);
        done += count;
        opts.onProgress?.(done, opts.products);
      })();
    }
    if (pending) await pending;
    await conn.unsafe(`DROP TABLE IF EXISTS synth_staging`);
  } finally {
    conn.release();
  }

  const seconds = (performance.now() - started) / 1000;
  return {
    merchants: stores.length,
    products: opts.products,
    seconds,
    productsPerSecond: seconds > 0 ? opts.products / seconds : opts.products,
  };
}

/** A one-line progress bar for stderr: `[#########-----------]  45%  45,000/100,000  21,345/s  ETA 3s`. */
export function progressLine(done: number, total: number, elapsedSeconds: number, width = 30): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const rate = elapsedSeconds > 0 ? done / elapsedSeconds : 0;
  const eta = rate > 0 ? Math.ceil((total - done) / rate) : 0;
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}%  ${fmt(done)}/${fmt(total)}  ${fmt(rate)}/s  ETA ${eta}s`;
}
