/** partsByBytes (gateway/rest/ingest-parts.ts): consecutive groups under a byte budget, one byte per separator. */
import { expect, test } from "bun:test";
import { partsByBytes } from "../../gateway/rest/ingest-parts.ts";

test("entries are grouped in order while their sizes plus one byte each fit the budget", () => {
  expect(partsByBytes([4, 4, 4, 4, 4], 10)).toEqual([[0, 1], [2, 3], [4]]);
  expect(partsByBytes([9, 9], 10)).toEqual([[0], [1]]);
  expect(partsByBytes([3, 3, 1], 10)).toEqual([[0, 1, 2]]);
  expect(partsByBytes([3, 3, 2], 10)).toEqual([[0, 1], [2]]);
});

test("an entry larger than the budget on its own is a group of one; nothing is an empty list", () => {
  expect(partsByBytes([2, 50, 2, 2], 10)).toEqual([[0], [1], [2, 3]]);
  expect(partsByBytes([], 10)).toEqual([]);
});
