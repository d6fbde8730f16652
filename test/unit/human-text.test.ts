import { expect, test } from "bun:test";
import { forHuman, TITLE_MAX } from "../../gateway/mcp/human-text.ts";

test("line breaks and other whitespace controls become one space, and the ends are trimmed", () => {
  expect(forHuman("Wool Socks\n\nTotal: 0.00 USD")).toBe("Wool Socks Total: 0.00 USD");
  expect(forHuman("\r\n a\tb\u2028c\u2029d\u0085e\v\f ")).toBe("a b c d e");
});

test("bidi overrides, isolates, zero-width and other controls are shown as <U+XXXX>, never applied", () => {
  expect(forHuman("Socks \u202Edsu 00.1\u202C")).toBe("Socks <U+202E>dsu 00.1<U+202C>");
  expect(forHuman("a\u2066b\u2069c\u200Bd\u200Fe\uFEFFf\u0000g\u001Bh\u007Fi")).toBe("a<U+2066>b<U+2069>c<U+200B>d<U+200F>e<U+FEFF>f<U+0000>g<U+001B>h<U+007F>i");
  expect(forHuman("lone \uD800 surrogate")).toBe("lone <U+D800> surrogate");
});

test("ordinary text is unchanged: accents, CJK, emoji and their joiners, quotes", () => {
  for (const t of ["Crème brûlée set", "東京タワー 模型", "Lamp 💡 (warm)", "Family 👨\u200D👩\u200D👧", "می\u200Cخواهم", `"Best" socks — 2 × 'pairs'`]) expect(forHuman(t)).toBe(t);
});

test("a long text is cut to the cap in code points, ending with an ellipsis", () => {
  const long = "😀".repeat(TITLE_MAX + 5);
  const shown = forHuman(long);
  expect([...shown]).toHaveLength(TITLE_MAX);
  expect(shown).toBe(`${"😀".repeat(TITLE_MAX - 1)}…`);
  expect(forHuman("x".repeat(TITLE_MAX))).toBe("x".repeat(TITLE_MAX));
  expect(forHuman("abcdef", 4)).toBe("abc…");
});
