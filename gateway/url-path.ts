/** The path of a request URL without parsing it into a URL object (hot path: every request). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}

/**
 * A path as logs record it: the sandbox card approval link's token (the buyer's bearer secret, docs/checkout.md
 * "The approval link is the buyer's secret") is replaced, so a 5xx line or a debug access line does not hand it on.
 * Any spelling a 404 line may see counts (audit O-1, review RD-2): doubled slashes, another letter case, percent-encoded
 * characters or separators, a suffix on the segment; and any 64-hex run (the token's shape) is replaced wherever it is.
 */
const APPROVAL_TOKEN = /(\/sandbox\/+payments[^/]*\/+[^/]+\/+)[^/]+/gi;
const TOKEN_SHAPE = /[0-9a-f]{64}/gi;
export function loggedPath(path: string): string {
  let seen = path;
  if (path.includes("%")) {
    try {
      seen = decodeURIComponent(path);
    } catch {
      // a malformed escape: match the path as it came
    }
  }
  const redacted = seen.replace(APPROVAL_TOKEN, "$1[redacted]").replace(TOKEN_SHAPE, "[redacted]");
  return redacted === seen ? path : redacted;
}
