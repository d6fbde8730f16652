/**
 * Typo expansion of a query word over the embedded engine's dictionary (MiniSearch's radix tree), by optimal string
 * alignment distance: Levenshtein's insertions, deletions and substitutions, plus a swap of two adjacent letters as
 * ONE edit ("sohes" → "shoes" is one typo, as in Meilisearch, whose docs count a transposition as a single edit;
 * Levenshtein counted it as two). Audit A, session 16 leftover; session 17 (engineer L).
 *
 * The walk is MiniSearch's own `fuzzyGet` (SearchableMap's `fuzzySearch`, minisearch 7.2.0: a distance matrix kept
 * across the tree, one row per letter of the path, rows in a band of ±max around the diagonal, a subtree left as soon
 * as a row's minimum exceeds max) with one more term per cell: d[i][j] = min(…, d[i−2][j−2] + 1) when the last two
 * letters are swapped. Stopping at a row whose minimum exceeds max stays exact: a transposition's cell is at least
 * d[i−1][j−1] of the row before (a substitution reaches it from the same cell), so it cannot come back under max.
 * The terms come out in the same order as `fuzzyGet`'s, so a query without a transposed letter expands exactly as
 * before (same terms, same distances, same order, so the same scores to the last bit).
 */

/**
 * The typos a match counts, Meilisearch's way: its edit distance, plus one when the first letters differ ("a typo on
 * the first letter of a word is treated as two typos", Meilisearch's typo tolerance docs; milli: 2 typos with the
 * first letter right, or 1 with it wrong). So "hsoes" (a swap moving the first letter) is two typos and not within a
 * 5-letter word's one, and "caturday" is not saturday (review Y-3, session 17). `fuzzyOsa` walks by distance alone;
 * callers filter with this.
 */
export function typosCounted(query: string, term: string, distance: number): number {
  return distance + (distance > 0 && term.charCodeAt(0) !== query.charCodeAt(0) ? 1 : 0);
}

/** MiniSearch's radix tree node: edge label → child node, and "" → the value at a complete term. */
export interface RadixNode<T> extends Map<string, T | RadixNode<T>> {}

/** Every term within `maxDistance` typos (OSA) of `query`: term → [value, distance], in MiniSearch's walk order. */
export function fuzzyOsa<T>(tree: RadixNode<T>, query: string, maxDistance: number): Map<string, [T, number]> {
  const results = new Map<string, [T, number]>();
  const n = query.length + 1;
  const m = n + maxDistance;
  const matrix = new Uint8Array(m * n).fill(maxDistance + 1);
  for (let j = 0; j < n; ++j) matrix[j] = j;
  for (let i = 1; i < m; ++i) matrix[i * n] = i;
  const q = new Uint16Array(query.length);
  for (let j = 0; j < query.length; j++) q[j] = query.charCodeAt(j);
  // the path's letter of each row (row i holds the term's letter i − 1)
  const rowCode = new Int32Array(m + 1).fill(-1);
  recurse(tree, q, maxDistance, results, matrix, rowCode, 1, n, "");
  return results;
}

function recurse<T>(
  node: RadixNode<T>,
  q: Uint16Array,
  maxDistance: number,
  results: Map<string, [T, number]>,
  matrix: Uint8Array,
  rowCode: Int32Array,
  m: number,
  n: number,
  prefix: string,
): void {
  const offset = m * n;
  key: for (const key of node.keys()) {
    if (key === "") {
      const distance = matrix[offset - 1]!;
      if (distance <= maxDistance) results.set(prefix, [node.get(key) as T, distance]);
      continue;
    }
    let i = m;
    for (let pos = 0; pos < key.length; ++pos, ++i) {
      const c = key.charCodeAt(pos);
      rowCode[i] = c;
      const before = i >= 2 ? rowCode[i - 1]! : -1;
      const thisRow = n * i;
      const prevRow = thisRow - n;
      const prev2Row = prevRow - n;
      let minDistance = matrix[thisRow]!;
      const jmin = Math.max(0, i - maxDistance - 1);
      const jmax = Math.min(n - 1, i + maxDistance);
      for (let j = jmin; j < jmax; ++j) {
        const rpl = matrix[prevRow + j]! + (c !== q[j] ? 1 : 0);
        const del = matrix[prevRow + j + 1]! + 1;
        const ins = matrix[thisRow + j]! + 1;
        let dist = rpl < del ? (rpl < ins ? rpl : ins) : del < ins ? del : ins;
        // cell (i, j + 1): the term's letters i − 2, i − 1 are the query's j, j − 1 swapped
        if (j >= 1 && before >= 0 && c === q[j - 1] && before === q[j] && c !== before) {
          const tr = matrix[prev2Row + j - 1]! + 1;
          if (tr < dist) dist = tr;
        }
        matrix[thisRow + j + 1] = dist;
        if (dist < minDistance) minDistance = dist;
      }
      if (minDistance > maxDistance) continue key;
    }
    recurse(node.get(key) as RadixNode<T>, q, maxDistance, results, matrix, rowCode, i, n, prefix + key);
  }
}

/** OSA distance of two words, giving up (returning max + 1) once it must exceed `max`. */
export function boundedOsaDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const w = b.length + 1;
  let prev2 = new Int32Array(w);
  let prev = new Int32Array(w);
  let cur = new Int32Array(w);
  for (let j = 0; j < w; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j < w; j++) {
      const cb = b.charCodeAt(j - 1);
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ca === cb ? 0 : 1));
      if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb && ca !== cb) v = Math.min(v, prev2[j - 2]! + 1);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    const t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  const d = prev[b.length]!;
  return d > max ? max + 1 : d;
}
