/**
 * COPY text-format encoding for product rows (the synthetic seed streams them; COPY parses far faster than
 * JSON). Text arrays become array literals, objects and object arrays become JSON, both escaped for COPY.
 */
import type { ProductRow } from "../../actors/store/schemas.ts";
import { PRODUCT_COLUMNS } from "./demo.ts";

const JSON_COLUMNS = new Set(["variants", "attributes"]);

/** Backslash, newline, carriage return and tab are COPY's specials in text format. */
export function escapeCopy(text: string): string {
  return text.replace(/[\\\n\r\t]/g, (c) => (c === "\\" ? "\\\\" : c === "\n" ? "\\n" : c === "\r" ? "\\r" : "\\t"));
}

/** `{"a","b \"c\""}`: every element quoted, so commas, braces and spaces need no further thought. */
export function arrayLiteral(items: ReadonlyArray<string | null>): string {
  return `{${items.map((e) => (e === null ? "NULL" : `"${e.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`)).join(",")}}`;
}

export function copyField(column: string, value: unknown): string {
  if (value === null || value === undefined) return "\\N";
  if (JSON_COLUMNS.has(column)) return escapeCopy(JSON.stringify(value));
  if (Array.isArray(value)) return escapeCopy(arrayLiteral(value as Array<string | null>));
  if (typeof value === "boolean") return value ? "t" : "f";
  if (value instanceof Date) return value.toISOString();
  return escapeCopy(String(value));
}

/** One COPY line (with its newline) in PRODUCT_COLUMNS order. */
export function copyLine(row: ProductRow): string {
  const r = row as unknown as Record<string, unknown>;
  return PRODUCT_COLUMNS.map((c) => copyField(c, r[c])).join("\t") + "\n";
}
