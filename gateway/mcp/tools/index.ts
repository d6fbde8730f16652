/** Every MCP tool, in the order tools/list advertises them. The registry is this list. */
import type { AnyTool } from "../registry.ts";
import * as discovery from "./discovery.ts";

export const ALL_TOOLS: AnyTool[] = [
  discovery.searchProducts,
  discovery.searchProductsEnriched,
  discovery.getProductDetails,
  discovery.browseCategories,
  discovery.compareProductsTool,
  discovery.nlwebAsk,
  discovery.getMerchantProfile,
  discovery.getAvailability,
  discovery.getPriceHistory,
  discovery.getRecommendations,
  discovery.getReturnPolicy,
  discovery.getSupportedProtocols,
  discovery.getPaymentMethods,
];
