/**
 * nlweb_ask's interpreter (pure): a shopper's sentence → a structured search.
 * "waterproof jacket under 80 euros in stock" → {query: "waterproof jacket", maxPrice: 80, currency: "EUR",
 * inStockOnly: true}. Deliberately rule-based: predictable, testable, no model to host.
 */

export interface AskInterpretation {
  query: string;
  minPrice?: number;
  maxPrice?: number;
  currency?: string;
  inStockOnly: boolean;
  sort?: "price_asc" | "price_desc" | "newest" | "trust_score";
}

const CURRENCY_WORDS: Record<string, string> = {
  "€": "EUR", eur: "EUR", euro: "EUR", euros: "EUR",
  "$": "USD", usd: "USD", dollar: "USD", dollars: "USD", bucks: "USD",
  "£": "GBP", gbp: "GBP", pound: "GBP", pounds: "GBP",
};

const STOP = new Set([
  "i", "im", "i'm", "want", "need", "looking", "for", "a", "an", "the", "some", "me", "find", "show", "please", "get", "buy",
  "with", "that", "is", "are", "which", "to", "of", "and", "or", "any", "something", "in", "on", "my", "can", "you", "costing", "priced",
]);

const NUM = String.raw`(\d+(?:[.,]\d{1,2})?)`;
const CUR = String.raw`(€|\$|£|euros?\b|eur\b|dollars?\b|usd\b|bucks\b|pounds?\b|gbp\b)`;

function num(s: string): number {
  return Number(s.replace(",", "."));
}

export function parseAsk(question: string): AskInterpretation {
  let text = ` ${question.toLowerCase().replace(/\s+/g, " ").trim()} `;
  const out: AskInterpretation = { query: "", inStockOnly: false };
  const take = (re: RegExp, f: (m: RegExpExecArray) => void) => {
    const m = re.exec(text);
    if (m) {
      f(m);
      text = text.replace(m[0], " ");
    }
  };
  const cur = (c: string | undefined) => {
    if (c && CURRENCY_WORDS[c]) out.currency = CURRENCY_WORDS[c];
  };
  take(new RegExp(String.raw`\bbetween\s+${CUR}?\s*${NUM}\s*${CUR}?\s+and\s+${CUR}?\s*${NUM}\s*${CUR}?`), (m) => {
    out.minPrice = num(m[2]!);
    out.maxPrice = num(m[5]!);
    cur(m[1] ?? m[3] ?? m[4] ?? m[6]);
  });
  take(new RegExp(String.raw`\b(?:under|below|less than|cheaper than|max(?:imum)?|up to|at most|<)\s*${CUR}?\s*${NUM}\s*${CUR}?`), (m) => {
    out.maxPrice = num(m[2]!);
    cur(m[1] ?? m[3]);
  });
  take(new RegExp(String.raw`\b(?:over|above|more than|at least|from|>)\s*${CUR}?\s*${NUM}\s*${CUR}?`), (m) => {
    out.minPrice = num(m[2]!);
    cur(m[1] ?? m[3]);
  });
  take(/\b(?:in stock|available now|available|ships now)\b/, () => {
    out.inStockOnly = true;
  });
  take(/\b(?:cheapest|lowest price|least expensive|budget)\b/, () => {
    out.sort = "price_asc";
  });
  take(/\b(?:most expensive|premium|high end|highest price)\b/, () => {
    out.sort = "price_desc";
  });
  take(/\b(?:newest|latest|new arrivals?)\b/, () => {
    out.sort = "newest";
  });
  take(/\b(?:most trusted|trusted|reliable seller)\b/, () => {
    out.sort = "trust_score";
  });
  out.query = text
    .replace(/[^\p{L}\p{N}\s'-]/gu, " ")
    .split(/\s+/)
    .filter((w) => w.length > 0 && !STOP.has(w) && !/^\d+([.,]\d+)?$/.test(w) && !CURRENCY_WORDS[w])
    .join(" ");
  return out;
}
