/** Schemas shared by several tools. Outputs name the fields an agent relies on and admit more (additive evolution). */
import { Type as T, type TSchema } from "@sinclair/typebox";
import * as Models from "../../openapi/models.ts";
import { withJsonNumbers } from "../../plugins/json-numbers.ts";

export const Uuid = T.String({ format: "uuid", description: "A UUID." });
export const Open = { additionalProperties: true } as const;
export const Strict = { additionalProperties: false } as const;
export const Nullable = <S extends ReturnType<typeof T.String> | ReturnType<typeof T.Number> | ReturnType<typeof T.Integer>>(s: S) => T.Union([s, T.Null()]);

/**
 * The catalog models are the OpenAPI document's (gateway/openapi/models.ts: the spec's full ProductSummary,
 * ProductDetail and MerchantSummary with their enums), so a tool's output schema and the REST answer's cannot
 * drift apart. Elysia's `t.Integer` there is a number-or-numeric-string union (meant for query strings): an
 * output is JSON, so it is advertised as the plain number, as the OpenAPI document shows it.
 */
const plainNumbers = <S extends TSchema>(s: S): S => withJsonNumbers(s as unknown as Parameters<typeof withJsonNumbers>[0]) as unknown as S;
export const MerchantSummary = plainNumbers(Models.MerchantSummary);
export const ProductSummary = plainNumbers(Models.ProductSummary);

export const SearchOutput = T.Object(
  {
    products: T.Array(ProductSummary),
    meta: T.Object({ total: T.Integer(), page: T.Integer(), limit: T.Integer(), totalPages: T.Integer() }, Open),
    queryMeta: T.Record(T.String(), T.Unknown()),
  },
  Open,
);

export const ProductDetail = plainNumbers(Models.ProductDetail);

export const Money = T.Object({ amount: T.Number(), currency: T.String() }, Open);

/** A generic object result for tools whose payload is documented in prose. */
export const AnyObject = T.Record(T.String(), T.Unknown());
