/**
 * Every REST/feature module of the gateway, in mount order. A module is `(svc: Services) => Elysia plugin`.
 * Adding a feature = one file under gateway/ plus one line here.
 */
import type { AnyElysia } from "elysia";
import type { Services } from "../services.ts";
import { docsRoutes } from "./docs.ts";
import { errorDocsRoutes } from "./error-docs.ts";
import { healthRoutes } from "./health.ts";
import { authRoutes } from "./auth.ts";
import { agentKeyRoutes } from "./agent-keys.ts";
import { cartRoutes } from "./cart.ts";
import { checkoutRoutes } from "./checkout.ts";
import { orderRoutes } from "./orders.ts";
import { merchantOrderRoutes } from "./merchant-orders.ts";
import { merchantReconcileRoutes } from "./merchant-reconcile.ts";
import { trustAgentRoutes, trustPublicRoutes, trustUserRoutes } from "./trust.ts";
import { wellKnownRoutes } from "./well-known.ts";
import { oauthRoutes } from "../oauth/index.ts";
import { searchRoutes } from "./search.ts";
import { productRoutes } from "./products.ts";
import { compareRoutes } from "./compare.ts";
import { merchantDirectoryRoutes, merchantRoutes } from "./merchants.ts";
import { merchantApiRoutes } from "./merchant-api.ts";
import { merchantSettingsRoutes } from "./merchant-settings.ts";
import { adminSearchRoutes } from "./admin-search.ts";
import { adminUserRoutes } from "./admin-users.ts";
import { webhookRoutes } from "./webhooks.ts";
import { walletRoutes } from "./wallet.ts";
import { bridgeRoutes } from "../bridge/index.ts";
import { ap2KeyRoutes } from "../bridge/ap2-keys.ts";
import { mcpRoutes } from "../mcp/server.ts";
import { dashboardRoutes } from "../dashboard/index.ts";

export type GatewayModule = (svc: Services) => AnyElysia;

export const gatewayModules: GatewayModule[] = [
  healthRoutes,
  docsRoutes,
  errorDocsRoutes,
  authRoutes,
  agentKeyRoutes,
  trustPublicRoutes,
  trustAgentRoutes,
  trustUserRoutes,
  wellKnownRoutes,
  oauthRoutes,
  searchRoutes,
  productRoutes,
  compareRoutes,
  merchantDirectoryRoutes,
  merchantRoutes,
  merchantApiRoutes,
  merchantSettingsRoutes,
  adminSearchRoutes,
  adminUserRoutes,
  webhookRoutes,
  mcpRoutes,
  cartRoutes,
  checkoutRoutes,
  orderRoutes,
  merchantOrderRoutes,
  merchantReconcileRoutes,
  walletRoutes,
  bridgeRoutes,
  ap2KeyRoutes,
  dashboardRoutes,
];
