/** Every MCP tool, in the order tools/list advertises them. The registry is this list (50 tools). */
import type { AnyTool } from "../registry.ts";
import * as c from "./commerce.ts";
import * as d from "./discovery.ts";
import * as i from "./integrations.ts";
import * as u from "./ucp.ts";
import * as w from "./wallet.ts";

export const ALL_TOOLS: AnyTool[] = [
  // discovery (public)
  d.searchProducts,
  d.searchProductsEnriched,
  d.getProductDetails,
  d.browseCategories,
  d.compareProductsTool,
  d.nlwebAsk,
  d.getMerchantProfile,
  d.getAvailability,
  i.checkLiveAvailability,
  d.getPriceHistory,
  d.getRecommendations,
  d.getReturnPolicy,
  d.getSupportedProtocols,
  d.getPaymentMethods,
  i.getTrustScore,
  i.getTrustExplanation,
  // cart
  c.createCart,
  c.getCart,
  c.updateCartItem,
  c.removeCartItem,
  c.applyCoupon,
  c.getShippingRates,
  i.negotiatePrice,
  i.startAttributeVerification,
  i.getAttributeVerification,
  // checkout
  c.previewCheckout,
  c.completeCheckout,
  c.getCheckoutStatus,
  c.cancelCheckout,
  i.issuePaymentMandate,
  // orders, returns, wallet
  c.onxGetOrders,
  c.getOrder,
  c.cancelOrder,
  c.onxCreateReturn,
  c.getRefundStatus,
  w.getWallet,
  w.provisionWallet,
  // customer endpoint
  i.verifyCustomerIdentity,
  // UCP binding
  u.ucpSearchCatalog,
  u.ucpLookupCatalog,
  u.ucpGetProduct,
  u.ucpCreateCart,
  u.ucpGetCart,
  u.ucpUpdateCart,
  u.ucpCreateCheckout,
  u.ucpGetCheckout,
  u.ucpUpdateCheckout,
  u.ucpCompleteCheckout,
  u.ucpCancelCheckout,
  u.ucpGetOrder,
];
