/**
 * Orders and what each is evidence of for trust (actors/trust/inputs.ts `saleOf`, R4-5): the pure rule's unit test
 * (test/unit/trust-refunded-sales.test.ts) and the SQL's database test (test/http/trust-refunded-sales.test.ts)
 * read the same table, so the two implementations cannot drift apart.
 */
import type { OrderMoney } from "../../actors/trust/inputs.ts";

export interface RefundEvidenceCase {
  name: string;
  order: OrderMoney;
  expected: { refunded: boolean; sale: boolean; netMinor: number };
}

export const REFUND_EVIDENCE_CASES: RefundEvidenceCase[] = [
  { name: "paid, nothing refunded", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: false, sale: true, netMinor: 5000 } },
  { name: "partly refunded", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 1200 }, expected: { refunded: true, sale: true, netMinor: 3800 } },
  { name: "fully refunded (status refunded)", order: { status: "refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 5000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "whole total refunded, status not moved (imported)", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 5000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "recorded as refunded with no amount", order: { status: "refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "under-capture refunded in full", order: { status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 4000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "under-capture, part refunded: net of the capture", order: { status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 1000 }, expected: { refunded: true, sale: true, netMinor: 3000 } },
  { name: "over-capture, the total refunded: the rest is still a sale", order: { status: "paid", totalMinor: 5000, capturedMinor: 6000, refundedMinor: 5000 }, expected: { refunded: true, sale: true, netMinor: 1000 } },
  { name: "free order (total 0), nothing refunded", order: { status: "delivered", totalMinor: 0, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: false, sale: true, netMinor: 0 } },
];
