/**
 * The MCP checkout tools say which changes block a payment (audit AX F7): the cart's complete, which MCP passes on
 * unchanged, refuses with STATE_EXECUTION_BLOCKED when stock is gone, the price moved beyond the cut, or another
 * checkout took a coupon's last use (details.reasons[].code coupon_exhausted, docs/checkout.md "Coupons and totals").
 * The tool's error text is what tools/list and docs/mcp-tools.md show an agent.
 */
import { expect, test } from "bun:test";
import { ALL_TOOLS } from "../../gateway/mcp/tools/index.ts";

test("complete_checkout and ucp_complete_checkout name coupon_exhausted beside out_of_stock and price_beyond_cut under STATE_EXECUTION_BLOCKED", () => {
  for (const name of ["complete_checkout", "ucp_complete_checkout"]) {
    const tool = ALL_TOOLS.find((t) => t.name === name)!;
    const said = (tool.errors as Record<string, string>).STATE_EXECUTION_BLOCKED;
    expect({ name, said }).toEqual({
      name,
      said: "stock gone, price moved beyond the cut since preview, or the coupon's last use taken by another checkout (details.reasons[].code, e.g. out_of_stock, price_beyond_cut, coupon_exhausted with store_id and coupon_code); nothing charged: preview again",
    });
  }
});
