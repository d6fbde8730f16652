/**
 * Text from others (a merchant's product titles, store names and coupon codes; an agent's payment_method) put into
 * the question a human approves (MCP elicitation summaries, confirm.ts). Such text must not be able to change what
 * the human reads around it: a line break can start a fake line ("\n\nTotal: 0.00 USD"), a bidi override (U+202E)
 * or isolate can reorder the amount that follows, and invisible format characters can hide words. So:
 * - line breaks, tabs and other whitespace controls become one space;
 * - every other control or format character and any lone surrogate is shown as a visible `<U+XXXX>`, so the human
 *   sees that something is there instead of its effect;
 * - runs of spaces collapse, the ends are trimmed, and the result is cut to `max` code points (ending "…"), so one
 *   long title cannot push the rest of the question out of sight.
 */

/** Whitespace controls and the Unicode line and paragraph separators: read as a space. */
const BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]/gu;
/**
 * Other controls (Cc), format characters (Cf: bidi overrides and isolates, marks, zero-width space, BOM…) and lone
 * surrogates (Cs). Not the zero-width joiner and non-joiner: emoji sequences and Persian or Indic words need them, and
 * they neither move nor hide text.
 */
const HIDDEN = /(?![\u200C\u200D])[\p{Cc}\p{Cf}\p{Cs}]/gu;

/** The longest product title (code points) a summary shows; longer ones end in "…". */
export const TITLE_MAX = 80;

export function forHuman(text: string, max = TITLE_MAX): string {
  const shown = text
    .replace(BREAKS, " ")
    .replace(HIDDEN, (c) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}>`)
    .replace(/ {2,}/g, " ")
    .trim();
  const points = [...shown];
  return points.length <= max ? shown : `${points.slice(0, max - 1).join("")}…`;
}
