/**
 * The API reference page (/api/docs): Scalar's browser bundle rendering /api/v1/openapi.json.
 *
 * The page is on the dashboard's origin, so a script it loads could read the dashboard with a logged-in
 * merchant's cookie (audit U LOW-3). @elysiajs/openapi's own page loads `@scalar/api-reference@latest` with no
 * integrity and no CSP. This one pins an exact release with its Subresource Integrity hash (a changed file is not
 * run) and sends a CSP that allows that one script URL and nothing else: no inline script, no other origin to
 * connect, frame, post a form or load fonts from. The bundle is not among our dependencies and the build fetches
 * nothing: the hash was computed from `dist/browser/standalone.js` in the npm tarball of that version, the same
 * bytes the CDN serves for a file the package contains (its `.min.js` is not in the package; the CDN minifies that
 * on the fly, so no hash could pin it). To upgrade: `npm pack @scalar/api-reference@<v>`, then
 * `openssl dgst -sha384 -binary package/dist/browser/standalone.js | openssl base64 -A`, and change both constants.
 */
export const SCALAR_VERSION = "1.72.1";
export const SCALAR_SCRIPT = `https://cdn.jsdelivr.net/npm/@scalar/api-reference@${SCALAR_VERSION}/dist/browser/standalone.js`;
export const SCALAR_INTEGRITY = "sha384-U11tb2XnKvmwt8RlTvnwUnYgrN+ur4Xyh9htLhjajWNR/Oyl5AX5DEz00qRmlrmK";

/**
 * - script-src: the pinned URL only (the integrity attribute checks its bytes); the configuration element is a
 *   `type="application/json"` data block, not a script.
 * - style-src 'unsafe-inline': the bundle injects its stylesheet at run time; styles cannot run code, and the page
 *   holds no content of a caller's to inject into.
 * - connect-src 'self': the document and "try it" requests go to this service only (Scalar's default proxy and
 *   fonts elsewhere are refused; the fonts are switched off in the configuration).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  `script-src ${SCALAR_SCRIPT}`,
  "style-src 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join("; ");

const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/'/g, "&#39;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function docsPageHtml(opts: { title: string; specPath: string }): string {
  const configuration = { url: opts.specPath, withDefaultFonts: false, _integration: "elysiajs" };
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${escapeAttr(opts.title)}</title>
  </head>
  <body>
    <script id="api-reference" type="application/json" data-url="${escapeAttr(opts.specPath)}" data-configuration='${escapeAttr(JSON.stringify(configuration))}'></script>
    <script src="${SCALAR_SCRIPT}" integrity="${SCALAR_INTEGRITY}" crossorigin="anonymous" referrerpolicy="no-referrer"></script>
  </body>
</html>
`;
}

/** The page's headers: the CSP above, no framing, no sniffing, no caching of an HTML page that names a script. */
export function docsPageHeaders(): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": DOCS_CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
  };
}
