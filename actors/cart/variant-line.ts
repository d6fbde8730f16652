/**
 * A product with variants is sold as one of them (audit A2-F13): its stock is the roll-up of its variants
 * (docs/catalog.md), so a line without one would sell units no variant gives up, and the order would not say which
 * was bought. The cart actor's `create` refuses such a line with this error; a caller that checks lines before
 * asking the human (MCP create_cart's summary) can use the same function, so both answer alike.
 */
import { fail, type ActorError } from "../runtime/errors.ts";

export interface VariantChoice {
  id: string;
  title?: string | null;
  inStock: boolean;
}

/** At most this many variants are listed in the error (a product may have 250; its details list every one). */
export const VARIANTS_LISTED = 50;

/** The refusal of line `i` of `product` when it names no variant, or null when it needs none. */
export function variantMissing(i: number, product: { id: string; title: string; variants: readonly VariantChoice[] }, variantId: string | null | undefined): ActorError | null {
  if (variantId || product.variants.length === 0) return null;
  return fail("MISSING_REQUIRED_ARGUMENT", `${product.title} comes in ${product.variants.length} variants: name one with variant_id (the product's details list them).`, {
    product_id: product.id,
    field: `items[${i}].variant_id`,
    variant_count: product.variants.length,
    variants: product.variants.slice(0, VARIANTS_LISTED).map((v) => ({ variant_id: v.id, title: v.title ?? null, in_stock: v.inStock })),
  });
}
