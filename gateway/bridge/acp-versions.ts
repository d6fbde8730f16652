/**
 * The ACP API versions served, each its own mapping layer over the same session and cart (acp.ts `AcpShapes`): the
 * routes (index.ts) and the error plugin's bridge shapes (error-shape.ts) pick one by the request's `API-Version`.
 */
import { ACP_2026_04_17 } from "./acp-2026-04-17.ts";
import { ACP_2025_09_29, type AcpApiVersion, type AcpShapes } from "./acp.ts";

const SHAPES: Record<AcpApiVersion, AcpShapes> = { "2025-09-29": ACP_2025_09_29, "2026-04-17": ACP_2026_04_17 };

export function acpShapes(v: AcpApiVersion): AcpShapes {
  return SHAPES[v];
}
