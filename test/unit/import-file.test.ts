import { describe, expect, test } from "bun:test";
import { externalIdRepeats, lineExternalId, repeatMessage, type LineRejection, type SentLine } from "../../actors/store/import-file.ts";
import { validateCatalogItems } from "../../actors/store/ingest.ts";

const item = (externalId: string, price = 5) => ({ externalId, title: "Lamp", price, currency: "USD" });

/** The store actor's own per-item judgement of a batch (what ingestCatalog answers, without the writes). */
function storeAnswer(batch: readonly SentLine[]) {
  const r = validateCatalogItems(batch.map((b) => b.item));
  return { upserted: r.valid.map((v) => ({ index: v.index })), rejected: r.rejected };
}

/** A whole import as the CLI and the dashboard run it: check each line, send full batches in order, settle each answer. */
function importFile(items: readonly unknown[], batchSize: number) {
  const repeats = externalIdRepeats();
  const acceptedLines: number[] = [];
  const rejected: LineRejection[] = [];
  let batch: SentLine[] = [];
  const flush = () => {
    const answer = storeAnswer(batch);
    acceptedLines.push(...answer.upserted.map((u) => batch[u.index]!.line));
    rejected.push(...repeats.settle(batch, answer));
    batch = [];
  };
  items.forEach((it, i) => {
    const repeat = repeats.check(it, i + 1);
    if (repeat) rejected.push({ line: i + 1, externalId: repeat.externalId, errors: [{ field: repeat.field, message: repeat.message }] });
    else batch.push({ line: i + 1, item: it });
    if (batch.length >= batchSize) flush();
  });
  flush();
  return { acceptedLines: acceptedLines.sort((a, b) => a - b), rejected: rejected.sort((a, b) => a.line - b.line) };
}

describe("the whole-file externalId rule of a catalog import", () => {
  test("a line is refused only after an earlier line with its externalId was accepted, naming that line", () => {
    const r = externalIdRepeats();
    expect(r.check(item("A"), 1)).toBeNull();
    expect(r.check(item("A"), 2)).toBeNull(); // line 1 is not answered yet: the store judges both
    r.settle([{ line: 1, item: item("A") }], { upserted: [{ index: 0 }], rejected: [] });
    expect(r.check(item("A"), 5)).toEqual({ externalId: "A", field: "externalId", message: repeatMessage(1) });
    expect(r.check(item("B"), 6)).toBeNull();
  });

  test("the message says the later line does not replace the imported one and which line to correct", () => {
    expect(repeatMessage(7)).toBe("repeated in this file (imported from line 7; a later line does not replace it, correct line 7 instead)");
  });

  test("a rejected line claims nothing: the correction after it is sent and accepted", () => {
    const r = externalIdRepeats();
    const bad = { line: 1, item: item("A", 5.999) };
    expect(r.settle([bad], storeAnswer([bad]))).toEqual([{ line: 1, externalId: "A", errors: [{ field: "price", message: expect.any(String) }] }]);
    expect(r.check(item("A", 5.99), 2)).toBeNull();
  });

  test("in one batch, the actor's in-batch repeat is reworded as the whole-file refusal, alone", () => {
    const r = externalIdRepeats();
    const batch = [
      { line: 1, item: item("A", 5.999) }, // rejected: price
      { line: 2, item: item("A") }, // the correction: accepted
      { line: 3, item: item("A", 6) }, // repeat of an accepted line
      { line: 4, item: item("A", 6.001) }, // repeat, and a bad price besides: only the repeat is said
    ];
    const out = r.settle(batch, storeAnswer(batch));
    expect(out.map((x) => [x.line, x.errors.map((e) => `${e.field} ${e.message}`)])).toEqual([
      [1, [expect.stringMatching(/^price /)]],
      [3, [`externalId ${repeatMessage(2)}`]],
      [4, [`externalId ${repeatMessage(2)}`]],
    ]);
  });

  test("every line has the same outcome and the same message whatever the batch size", () => {
    const items = [
      item("A", 5.999), // 1 rejected
      item("B"), // 2 accepted
      item("A", 5.99), // 3 correction: accepted
      item("B", 7), // 4 repeat of line 2
      item("C", 1.001), // 5 rejected
      item("A", 4), // 6 repeat of line 3
      item("C", 1.002), // 7 rejected again
      item("C", 1), // 8 accepted
      { title: "no id" }, // 9 rejected by the schema, claims nothing
      item("C", 2), // 10 repeat of line 8
    ];
    const one = importFile(items, 1);
    expect(one.acceptedLines).toEqual([2, 3, 8]);
    expect(one.rejected.map((x) => x.line)).toEqual([1, 4, 5, 6, 7, 9, 10]);
    expect(one.rejected.find((x) => x.line === 6)!.errors).toEqual([{ field: "externalId", message: repeatMessage(3) }]);
    for (const size of [2, 3, 4, 1000]) expect(importFile(items, size)).toEqual(one);
  });

  test("ids compare exactly, as the store's upsert key does", () => {
    const r = externalIdRepeats();
    r.settle([{ line: 1, item: item("a") }], { upserted: [{ index: 0 }], rejected: [] });
    expect(r.check(item("a"), 2)).not.toBeNull();
    expect(r.check(item("A"), 3)).toBeNull();
    expect(r.check(item("a "), 4)).toBeNull();
  });

  test("a line without a string externalId is left to the store actor's validation and claims nothing", () => {
    const r = externalIdRepeats();
    for (const v of [null, 42, "A", ["A"], { externalId: 7 }, {}]) expect(r.check(v, 1)).toBeNull();
    expect(lineExternalId(["A"])).toBeNull();
    expect(lineExternalId({ externalId: "X" })).toBe("X");
  });

  test("two files are tracked apart", () => {
    const one = externalIdRepeats();
    const two = externalIdRepeats();
    one.settle([{ line: 1, item: item("A") }], { upserted: [{ index: 0 }], rejected: [] });
    expect(one.check(item("A"), 2)).not.toBeNull();
    expect(two.check(item("A"), 2)).toBeNull();
  });
});
