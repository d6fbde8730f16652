/**
 * Product generation shared by the demo seed and the synthetic catalog: category templates (fictional brands),
 * prices, variants, attributes, GTINs and stock, all drawn from an explicit `Rng`.
 */
import type { ProductAttributes, ProductRecord, Variant } from "../../actors/store/schemas.ts";
import { makeGtin13, Rng, stableUuid } from "./prng.ts";

export type VariantKind = "apparel" | "shoe" | "color" | "none";

interface ItemTemplate {
  noun: string;
  /** USD major units. */
  price: readonly [number, number];
  grams: readonly [number, number];
  materials: readonly string[];
  variants: VariantKind;
  /** A few words on what it is for, used in the description. */
  use: string;
  extra?: (rng: Rng) => Record<string, string | number | boolean>;
}

interface CategoryTemplate {
  name: string;
  code: string;
  brands: readonly string[];
  items: readonly ItemTemplate[];
}

const it = (
  noun: string,
  price: readonly [number, number],
  grams: readonly [number, number],
  materials: readonly string[],
  variants: VariantKind,
  use: string,
  extra?: ItemTemplate["extra"],
): ItemTemplate => ({ noun, price, grams, materials, variants, use, extra });

export const CATEGORIES: readonly CategoryTemplate[] = [
  {
    name: "Electronics",
    code: "EL",
    brands: ["Auralis", "Voltiq", "Nimbus Audio", "Kestrel Labs", "Lumora", "Corvid Tech"],
    items: [
      it("Wireless Earbuds", [29, 199], [40, 70], ["ABS plastic", "recycled plastic"], "color", "commutes, workouts and calls", (r) => ({ batteryLifeHours: r.int(5, 10), bluetooth: "5.3" })),
      it("Bluetooth Speaker", [25, 249], [300, 1200], ["aluminium", "recycled plastic", "fabric mesh"], "color", "parties, the beach and the backyard", (r) => ({ batteryLifeHours: r.int(8, 24), waterproofRating: r.pick(["IPX5", "IPX7", "IP67"]) })),
      it("USB-C Charger 65W", [19, 69], [90, 180], ["polycarbonate", "GaN"], "none", "charging a laptop, tablet and phone from one plug", () => ({ wattage: 65, ports: 2 })),
      it("Mechanical Keyboard", [49, 189], [700, 1100], ["aluminium", "PBT plastic"], "color", "typing all day with tactile switches", (r) => ({ switchType: r.pick(["brown", "red", "blue"]), layout: "ANSI" })),
      it("Wireless Mouse", [15, 89], [60, 120], ["ABS plastic", "recycled plastic"], "color", "precise tracking on any surface", (r) => ({ dpi: r.pick([1600, 3200, 8000]) })),
      it("4K Webcam", [39, 149], [120, 250], ["ABS plastic"], "none", "sharp video calls and streaming", () => ({ resolution: "3840x2160" })),
      it("Smartwatch", [79, 399], [35, 60], ["aluminium", "stainless steel", "silicone"], "color", "fitness tracking, notifications and sleep insights", (r) => ({ batteryLifeDays: r.int(2, 14), waterResistance: "5ATM" })),
      it("Power Bank 20000mAh", [25, 79], [330, 450], ["aluminium", "ABS plastic"], "color", "keeping devices charged while travelling", () => ({ capacityMah: 20000 })),
      it("Noise-Cancelling Headphones", [79, 349], [220, 320], ["aluminium", "protein leather"], "color", "long flights and focused work", (r) => ({ batteryLifeHours: r.int(20, 40) })),
      it("Portable SSD 1TB", [69, 179], [40, 90], ["aluminium"], "none", "fast backups and moving large files", () => ({ capacityGb: 1000, interface: "USB 3.2 Gen 2" })),
    ],
  },
  {
    name: "Apparel",
    code: "AP",
    brands: ["Northfold", "Wren & Co", "Tidewater", "Alder Supply", "Common Thread", "Saltmarsh"],
    items: [
      it("Organic Cotton T-Shirt", [15, 45], [150, 220], ["organic cotton"], "apparel", "everyday wear that softens with every wash"),
      it("Merino Wool Sweater", [60, 160], [300, 450], ["merino wool"], "apparel", "warmth without bulk on cool days"),
      it("Slim Fit Chinos", [35, 90], [400, 550], ["cotton twill", "organic cotton"], "apparel", "the office and the weekend"),
      it("Denim Jacket", [60, 150], [700, 950], ["denim", "recycled denim"], "apparel", "layering in every season"),
      it("Rain Shell Jacket", [80, 250], [300, 450], ["recycled nylon", "polyester"], "apparel", "staying dry on wet commutes and hikes", () => ({ waterproofRatingMm: 10000 })),
      it("Linen Button-Down Shirt", [35, 90], [200, 280], ["linen"], "apparel", "hot summer days"),
      it("Fleece Hoodie", [40, 95], [450, 650], ["recycled polyester fleece", "cotton blend"], "apparel", "lounging and cool evenings"),
      it("Running Shorts", [20, 55], [90, 140], ["recycled polyester"], "apparel", "tempo runs and the gym"),
    ],
  },
  {
    name: "Home & Kitchen",
    code: "HK",
    brands: ["Hearth & Field", "Copperline", "Oak Street Home", "Kiln House", "Brightwell"],
    items: [
      it('Cast Iron Skillet 10"', [25, 70], [2200, 2800], ["cast iron"], "none", "searing, baking and campfire cooking", () => ({ preSeasoned: true })),
      it("Pour-Over Coffee Set", [29, 79], [500, 900], ["borosilicate glass", "stainless steel"], "none", "a slow, clean morning brew"),
      it('Chef\'s Knife 8"', [35, 160], [180, 260], ["high-carbon stainless steel", "Damascus steel"], "none", "slicing, dicing and mincing"),
      it("Bamboo Cutting Board", [15, 45], [800, 1500], ["bamboo"], "none", "prepping vegetables and serving cheese"),
      it("Insulated Water Bottle 750ml", [18, 45], [300, 420], ["stainless steel"], "color", "cold drinks for 24 hours and hot for 12"),
      it("Stoneware Dinnerware Set (12 pc)", [60, 180], [6000, 9000], ["stoneware"], "color", "family dinners and entertaining"),
      it("Linen Duvet Cover", [70, 220], [1000, 1500], ["linen"], "color", "breathable, relaxed bedding"),
      it("Glass Food Storage Set", [25, 60], [2000, 3500], ["borosilicate glass", "bamboo"], "none", "meal prep and leftovers without plastic"),
      it("French Press 1L", [20, 65], [600, 900], ["borosilicate glass", "stainless steel"], "none", "rich, full-bodied coffee"),
      it("Scented Soy Candle", [14, 38], [300, 450], ["soy wax", "cotton wick"], "none", "a calm, cosy room", (r) => ({ burnTimeHours: r.int(35, 60) })),
    ],
  },
  {
    name: "Sports & Outdoors",
    code: "SO",
    brands: ["Ridgeback", "Trailwise", "Peakform", "Basecamp Co", "Swiftline"],
    items: [
      it("Yoga Mat 6mm", [25, 90], [900, 2500], ["natural rubber", "TPE", "cork"], "color", "yoga, pilates and floor work"),
      it("Trail Running Shoes", [80, 170], [550, 700], ["recycled mesh", "rubber"], "shoe", "technical trails and muddy climbs"),
      it("2-Person Backpacking Tent", [150, 450], [1200, 2200], ["ripstop nylon", "aluminium"], "none", "lightweight overnight trips", () => ({ capacity: 2, seasons: 3 })),
      it("Adjustable Dumbbell 25 lb", [60, 200], [11000, 12000], ["steel", "rubber"], "none", "compact home strength training"),
      it("Carbon Trekking Poles", [40, 160], [400, 550], ["carbon fibre", "cork"], "none", "steep descents and long hikes"),
      it("Down Sleeping Bag 20°F", [120, 380], [900, 1400], ["recycled down", "nylon"], "none", "cold nights in the backcountry"),
      it("Cycling Helmet", [45, 180], [250, 350], ["EPS foam", "polycarbonate"], "color", "road rides and commuting", () => ({ certification: "CPSC" })),
      it("Resistance Band Set", [15, 45], [400, 700], ["natural latex"], "none", "mobility and travel workouts"),
      it("Daypack 25L", [45, 140], [600, 900], ["recycled polyester", "nylon"], "color", "day hikes and the daily carry"),
    ],
  },
  {
    name: "Beauty & Personal Care",
    code: "BE",
    brands: ["Lumen Botanics", "Fernwood", "Pure Coast", "Atelier Skin", "Moss & Stone"],
    items: [
      it("Vitamin C Serum 30ml", [18, 65], [80, 120], ["glass bottle"], "none", "brightening dull skin"),
      it("Hydrating Face Cream 50ml", [20, 80], [100, 160], ["glass jar"], "none", "all-day moisture for dry skin"),
      it("Bamboo Toothbrush 4-Pack", [8, 18], [60, 90], ["bamboo", "castor-bean bristles"], "none", "a plastic-free bathroom"),
      it("Solid Shampoo Bar", [10, 20], [80, 110], ["plant-based surfactants"], "none", "zero-waste hair care"),
      it("Mineral Sunscreen SPF 50", [14, 38], [100, 160], ["zinc oxide", "aluminium tube"], "none", "reef-friendly sun protection"),
      it("Beard Oil 30ml", [14, 32], [70, 100], ["jojoba oil", "argan oil"], "none", "a soft, conditioned beard"),
      it("Sonic Electric Toothbrush", [35, 140], [120, 200], ["ABS plastic"], "color", "a dentist-clean feeling at home", (r) => ({ batteryLifeDays: r.int(14, 30) })),
      it("Ionic Hair Dryer", [40, 180], [450, 700], ["ABS plastic", "ceramic"], "color", "fast drying with less frizz", () => ({ wattage: 1875 })),
    ],
  },
  {
    name: "Toys & Games",
    code: "TG",
    brands: ["Little Otter", "Playwright Games", "Brickhaven", "Kitefox", "Meadow Toys"],
    items: [
      it("Wooden Building Blocks (100 pc)", [25, 60], [1500, 2500], ["beech wood", "water-based paint"], "none", "open-ended play for ages 2 and up", () => ({ ageMin: 2 })),
      it("Strategy Board Game", [25, 70], [1000, 1800], ["cardboard", "wood"], "none", "game nights for 2 to 5 players", (r) => ({ players: `2-${r.int(4, 6)}`, playTimeMinutes: r.pick([45, 60, 90]) })),
      it("1000-Piece Jigsaw Puzzle", [15, 35], [600, 900], ["recycled cardboard"], "none", "slow, screen-free afternoons"),
      it("Remote Control Off-Road Car", [35, 140], [900, 1600], ["ABS plastic", "rubber"], "color", "racing over grass, gravel and sand", () => ({ ageMin: 8 })),
      it("Plush Teddy Bear", [15, 45], [250, 500], ["recycled polyester plush"], "color", "bedtime cuddles", () => ({ ageMin: 0 })),
      it("STEM Robot Kit", [45, 150], [700, 1200], ["ABS plastic", "electronics"], "none", "learning to code by building", () => ({ ageMin: 8 })),
      it("Party Card Game", [10, 25], [200, 350], ["paper"], "none", "quick rounds with friends", (r) => ({ players: `3-${r.int(8, 12)}` })),
    ],
  },
  {
    name: "Pet Supplies",
    code: "PS",
    brands: ["Good Boy Goods", "Whiskerworks", "Paw Trail", "Kindred Pet"],
    items: [
      it("Orthopedic Dog Bed", [45, 160], [2000, 4500], ["memory foam", "recycled polyester"], "color", "older dogs and joint support"),
      it("Cat Scratching Post", [25, 90], [2500, 6000], ["sisal", "engineered wood"], "color", "saving your sofa"),
      it("Grain-Free Dog Food 12 lb", [35, 75], [5400, 5500], ["salmon", "sweet potato"], "none", "sensitive stomachs"),
      it("Reflective Dog Leash 6 ft", [15, 40], [150, 250], ["recycled nylon"], "color", "safe evening walks"),
      it("Stainless Steel Pet Bowl Set", [15, 35], [400, 600], ["stainless steel", "silicone"], "none", "non-slip, dishwasher-safe meals"),
      it("Interactive Cat Toy", [10, 35], [100, 300], ["ABS plastic", "feathers"], "none", "indoor cats who need to hunt"),
    ],
  },
  {
    name: "Garden",
    code: "GA",
    brands: ["Greenhaven", "Rootstock", "Sunpatch", "Fieldhouse"],
    items: [
      it("Cedar Raised Garden Bed", [80, 250], [12000, 20000], ["cedar wood"], "none", "vegetables and herbs at a comfortable height"),
      it("Bypass Pruning Shears", [18, 60], [200, 260], ["carbon steel", "aluminium"], "none", "clean cuts on live stems"),
      it("Solar Path Lights (8-pack)", [25, 70], [1200, 1800], ["stainless steel", "recycled plastic"], "none", "lighting walkways without wiring"),
      it("Compost Bin 80 gal", [50, 140], [6000, 9000], ["recycled plastic"], "none", "turning kitchen scraps into soil"),
      it("Galvanized Watering Can 2 gal", [25, 60], [1000, 1400], ["galvanized steel"], "none", "gentle watering of seedlings"),
      it("Herb Seed Starter Kit", [15, 35], [300, 500], ["coir", "paper"], "none", "growing basil, parsley and thyme indoors"),
    ],
  },
];

export const CATEGORY_NAMES = CATEGORIES.map((c) => c.name);

const ADJECTIVES = ["Classic", "Everyday", "Pro", "Essential", "Premium", "Compact", "Eco", "Lightweight", "Heritage", "Signature", "Ultra", "Trail", "Studio", "Go", "Max"] as const;
const SERIES = ["", "", "", " II", " 2", " X", " Plus", " Air", " Mini", " 3"] as const;
export const COLORS = ["Black", "White", "Navy", "Charcoal", "Olive", "Sand", "Forest Green", "Burgundy", "Sky Blue", "Coral"] as const;
const APPAREL_SIZES = ["XS", "S", "M", "L", "XL", "XXL"] as const;
const SHOE_SIZES = ["7", "8", "9", "10", "11", "12"] as const;
const ORIGINS = ["US", "CN", "VN", "PT", "DE", "IN", "MX", "TW", "IT", "BD", "JP", "CA"] as const;
const TAG_POOL = ["bestseller", "new", "gift-idea", "sustainable", "limited", "sale", "staff-pick", "travel", "eco-friendly", "bundle"] as const;

/** Rough USD → currency factors; only used to make non-USD prices look native. */
const FX: Record<string, number> = { USD: 1, EUR: 0.92, GBP: 0.79, CAD: 1.36 };

/** Knobs that let a merchant's catalog be good or sloppy (feeds the trust engine's data-quality signals). */
export interface CatalogQuality {
  missingGtinRate: number;
  invalidGtinRate: number;
  missingImageRate: number;
  outOfStockRate: number;
  untrackedStockRate: number;
  /** in_stock disagrees with stock_quantity (data-consistency signal). */
  inconsistentStockRate: number;
  missingAttributesRate: number;
  compareAtRate: number;
}

export const GOOD_QUALITY: CatalogQuality = {
  missingGtinRate: 0.05,
  invalidGtinRate: 0,
  missingImageRate: 0,
  outOfStockRate: 0.08,
  untrackedStockRate: 0.1,
  inconsistentStockRate: 0,
  missingAttributesRate: 0.03,
  compareAtRate: 0.3,
};

export interface ProductContext {
  /** Namespace for ids, e.g. `demo:20250101`. */
  idSpace: string;
  storeSlug: string;
  externalId: string;
  currency: string;
  category: CategoryTemplate;
  quality: CatalogQuality;
  now: Date;
  /** When the merchant last synced; products carry it as synced_at. */
  syncedAt: Date;
  imageHost?: string;
}

const DAY = 86_400_000;

/** A price that looks like a shelf price: 24.99, 119.00, 7.49 … in minor units. */
export function shelfPriceMinor(rng: Rng, usdMajor: number, currency: string): number {
  const major = usdMajor * (FX[currency] ?? 1);
  if (major < 10) return Math.max(99, Math.round(major * 2) * 50 - 1);
  if (major < 100) return Math.floor(major) * 100 + rng.pick([99, 99, 95, 0, 49]);
  return Math.round(major / 5) * 500 + rng.pick([0, -1, -1]);
}

function variantsFor(rng: Rng, kind: VariantKind, ctx: ProductContext, stocked: boolean, tracked: boolean): Variant[] {
  let combos: Array<Record<string, string>> = [];
  if (kind === "apparel") {
    const colors = rng.sample(COLORS, rng.int(1, 3));
    const sizes = APPAREL_SIZES.slice(rng.int(0, 1), rng.int(4, 6));
    combos = colors.flatMap((color) => sizes.map((size) => ({ size, color })));
  } else if (kind === "shoe") {
    const colors = rng.sample(COLORS, rng.int(1, 2));
    combos = colors.flatMap((color) => SHOE_SIZES.map((size) => ({ size, color })));
  } else if (kind === "color") {
    combos = rng.sample(COLORS, rng.int(2, 4)).map((color) => ({ color }));
  }
  return combos.map((options, i) => {
    const qty = tracked ? (stocked ? rng.int(0, 40) : 0) : null;
    return {
      id: stableUuid(ctx.idSpace, "variant", ctx.storeSlug, ctx.externalId, i),
      sku: `${ctx.externalId}-${Object.values(options).map((v) => v.replace(/\s+/g, "").slice(0, 3).toUpperCase()).join("-")}`,
      title: Object.values(options).join(" / "),
      options,
      priceMinor: null,
      stockQuantity: qty,
      inStock: qty === null ? stocked : qty > 0,
    };
  });
}

function description(rng: Rng, brand: string, noun: string, t: ItemTemplate, material: string | undefined, recycled: number): string {
  const opener = rng.pick([
    `The ${brand} ${noun} is built for ${t.use}.`,
    `Designed for ${t.use}, this ${noun.toLowerCase()} from ${brand} keeps things simple.`,
    `${brand} made this ${noun.toLowerCase()} for ${t.use}.`,
  ]);
  const mat = material ? ` Made from ${material}${recycled >= 30 ? ` with ${recycled}% recycled content` : ""}.` : "";
  const closer = rng.pick([
    " Backed by a one-year warranty.",
    " Thoughtfully packaged in plastic-free materials.",
    " A customer favourite for everyday use.",
    " Ships ready to use, no assembly required.",
    "",
  ]);
  return opener + mat + closer;
}

/** One product for a store. Identity fields (`id`, variant ids) depend only on idSpace, slug and externalId. */
export interface ProductOverride extends Partial<ProductRecord> {
  /** USD major units before the currency factor. */
  baseUsd?: number;
  /** Use this item template (by noun) instead of a random one. */
  templateNoun?: string;
}

export function generateProduct(rng: Rng, ctx: ProductContext, override?: ProductOverride): ProductRecord {
  const drawn = rng.pick(ctx.category.items);
  const t = (override?.templateNoun && ctx.category.items.find((i) => i.noun === override.templateNoun)) || drawn;
  const brand = override?.brand ?? rng.pick(ctx.category.brands);
  const adjective = rng.pick(ADJECTIVES);
  const series = rng.pick(SERIES);
  // Model suffixes only read naturally on gear whose name does not already end in a size or count.
  const suffix = ["EL", "SO", "TG"].includes(ctx.category.code) && /[a-z]$/i.test(t.noun) ? series : "";
  const title = override?.title ?? `${brand} ${adjective} ${t.noun}${suffix}`;
  const q = ctx.quality;

  const usd = override?.baseUsd ?? rng.range(t.price[0], t.price[1]);
  const priceMinor = override?.priceMinor ?? shelfPriceMinor(rng, usd, ctx.currency);
  const compareAtPriceMinor =
    override?.compareAtPriceMinor !== undefined
      ? override.compareAtPriceMinor
      : rng.chance(q.compareAtRate)
        ? Math.round((priceMinor * rng.range(1.15, 1.45)) / 100) * 100
        : null;

  const tracked = !rng.chance(q.untrackedStockRate);
  const stocked = !rng.chance(q.outOfStockRate);
  let stockQuantity: number | null = tracked ? (stocked ? rng.int(1, 250) : 0) : null;
  let inStock = stockQuantity === null ? stocked : stockQuantity > 0;
  if (tracked && rng.chance(q.inconsistentStockRate)) inStock = !inStock;
  const variants = variantsFor(rng, t.variants, ctx, stocked, tracked);
  if (variants.length > 0 && stockQuantity !== null) {
    stockQuantity = variants.reduce((s, v) => s + (v.stockQuantity ?? 0), 0);
    inStock = stockQuantity > 0;
  }

  let gtin: string | null = rng.chance(q.missingGtinRate) ? null : makeGtin13(rng, "0" + String(rng.int(10, 99)));
  if (gtin && rng.chance(q.invalidGtinRate)) gtin = gtin.slice(0, 12) + String((Number(gtin[12]) + 1) % 10);
  if (override && "gtin" in override) gtin = override.gtin ?? null;

  const material = rng.pick(t.materials);
  const recycled = /recycled/i.test(material) ? rng.int(40, 100) : rng.chance(0.3) ? rng.int(5, 30) : 0;
  const attributes: ProductAttributes = rng.chance(q.missingAttributesRate)
    ? {}
    : {
        material,
        weightGrams: rng.int(t.grams[0], t.grams[1]),
        origin: rng.pick(ORIGINS),
        recycledContentPercent: recycled,
        ...(t.extra ? t.extra(rng) : {}),
      };

  const host = ctx.imageHost ?? "https://images.example.com";
  const imageCount = rng.chance(q.missingImageRate) ? 0 : rng.int(1, 4);
  const images = Array.from({ length: imageCount }, (_, i) => `${host}/${ctx.storeSlug}/${ctx.externalId.toLowerCase()}-${i + 1}.jpg`);

  const createdAt = new Date(ctx.now.getTime() - rng.int(20, 700) * DAY - rng.int(0, DAY - 1));
  const updatedAt = new Date(Math.min(ctx.syncedAt.getTime(), createdAt.getTime() + rng.int(0, 400) * DAY));

  const tags = rng.sample(TAG_POOL, rng.int(0, 3));
  if (recycled >= 50 && !tags.includes("sustainable")) tags.push("sustainable");
  if (compareAtPriceMinor !== null && !tags.includes("sale")) tags.push("sale");

  const record: ProductRecord = {
    id: stableUuid(ctx.idSpace, "product", ctx.storeSlug, ctx.externalId),
    storeSlug: ctx.storeSlug,
    externalId: ctx.externalId,
    title,
    description: override?.description ?? description(rng, brand, t.noun, t, attributes.material, recycled),
    brand,
    category: ctx.category.name,
    tags,
    gtin,
    priceMinor,
    compareAtPriceMinor,
    currency: ctx.currency,
    stockQuantity,
    inStock,
    images,
    variants,
    attributes,
    active: override?.active ?? true,
    createdAt: createdAt.toISOString(),
    updatedAt: updatedAt.toISOString(),
    syncedAt: ctx.syncedAt.toISOString(),
  };
  return record;
}

export function categoryByName(name: string): CategoryTemplate {
  const c = CATEGORIES.find((x) => x.name === name);
  if (!c) throw new Error(`unknown category ${name}`);
  return c;
}
