/** Schemas shared by several tools. Outputs name the fields an agent relies on and admit more (additive evolution). */
import { Type as T } from "@sinclair/typebox";

export const Uuid = T.String({ format: "uuid", description: "A UUID." });
export const Open = { additionalProperties: true } as const;
export const Strict = { additionalProperties: false } as const;
export const Nullable = <S extends ReturnType<typeof T.String> | ReturnType<typeof T.Number> | ReturnType<typeof T.Integer>>(s: S) => T.Union([s, T.Null()]);

export const MerchantSummary = T.Object(
  {
    slug: T.String(),
    name: T.String(),
    trustScore: T.Union([T.Number(), T.Null()]),
    verificationLevel: T.String(),
    storeStatus: T.String(),
  },
  Open,
);

export const ProductSummary = T.Object(
  {
    id: T.String(),
    title: T.String(),
    price: T.Number(),
    currency: T.String(),
    inStock: T.Boolean(),
    merchant: MerchantSummary,
    relevanceScore: T.Number(),
    why_ranked: T.String(),
  },
  Open,
);

export const SearchOutput = T.Object(
  {
    products: T.Array(ProductSummary),
    meta: T.Object({ total: T.Integer(), page: T.Integer(), limit: T.Integer(), totalPages: T.Integer() }, Open),
    queryMeta: T.Record(T.String(), T.Unknown()),
  },
  Open,
);

export const ProductDetail = T.Object(
  {
    id: T.String(),
    title: T.String(),
    description: T.String(),
    price: T.Number(),
    currency: T.String(),
    inStock: T.Boolean(),
    stockQuantity: T.Union([T.Integer(), T.Null()]),
    images: T.Array(T.String()),
    variants: T.Array(T.Record(T.String(), T.Unknown())),
    attributes: T.Record(T.String(), T.Unknown()),
    merchant: MerchantSummary,
    policies: T.Object({ acceptsReturns: T.Boolean() }, Open),
    freshnessTier: T.String(),
  },
  Open,
);

export const Money = T.Object({ amount: T.Number(), currency: T.String() }, Open);

/** A generic object result for tools whose payload is documented in prose. */
export const AnyObject = T.Record(T.String(), T.Unknown());
