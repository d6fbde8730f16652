/**
 * The error shape of a request the gateway refuses before a bridge's handler runs (review R3-4). docs/protocols.md
 * promises ACP and UCP clients their protocol's own error objects, but the refusals of the request contract (a form
 * or text body, `[]`, a body that does not parse, a repeated query parameter: gateway/plugins/json-body.ts), the
 * body bounds, the key check and the route's own schema are thrown before `respond()` (index.ts) and reached the
 * error plugin, which answered our REST envelope. The error plugin asks here which shape a failed request gets and
 * converts its envelope, so every error of an ACP or UCP surface has that protocol's shape, with the same status.
 * Only the error path pays for this: nothing runs for a request that succeeds.
 */
import { ActorError, isErrorCode } from "../../actors/runtime/errors.ts";
import { acpRequestedVersion, type AcpApiVersion } from "./acp.ts";
import { acpShapes } from "./acp-versions.ts";
import { bridgedRequest, detectProtocol } from "./detect.ts";
import { ucpError } from "./ucp.ts";

/** The protocol whose error shape a refusal gets; ACP's in the API version the request names (when one served). */
export type ShapedProtocol = { protocol: "acp"; version: AcpApiVersion } | { protocol: "ucp" };

const ACP_PREFIX = "/api/v1/agent/acp/";
const UCP_PREFIX = "/api/v1/agent/ucp/";
/** The REST checkout, which hands another protocol's request to its bridge (detect.ts). */
const CHECKOUT_PATH = "/api/v1/agent/checkout";

/**
 * The protocol whose error shape a failed request gets, or null for our envelope: the ACP and UCP routes by path;
 * POST /agent/checkout when it was set aside for ACP/UCP, or would be by its `x-protocol` header or body shape (a
 * refusal before the route's own detection). AP2 defines no HTTP error shape: our envelope (null).
 */
export function errorShapeOf(path: string, request: Request, body: unknown): ShapedProtocol | null {
  const acp = (): ShapedProtocol => ({ protocol: "acp", version: acpRequestedVersion(request.headers) });
  if (path.startsWith(ACP_PREFIX)) return acp();
  if (path.startsWith(UCP_PREFIX)) return { protocol: "ucp" };
  if (path !== CHECKOUT_PATH && path !== `${CHECKOUT_PATH}/`) return null;
  const protocol = bridgedRequest(request)?.protocol ?? detectProtocol(request.headers, body);
  return protocol === "acp" ? acp() : protocol === "ucp" ? { protocol: "ucp" } : null;
}

/** Our error envelope's fields (gateway/envelope.ts `errorBody`). */
interface Envelope {
  code: string;
  error: string;
  details?: Record<string, unknown>;
}

/**
 * The envelope as the protocol's error object, through the bridges' own converters (acp.ts `acpError`, ucp.ts
 * `ucpError`) so both paths answer alike. ACP's `param` is a JSONPath into the request body (UCP's `path` alike): a failure
 * located in the query string or the path (`details.location`) names no body field, so it gets none (the field stays
 * in `details`).
 */
export function bridgeErrorBody(shape: ShapedProtocol, envelope: Envelope): unknown {
  const code = envelope.code;
  const err = new ActorError(isErrorCode(code) ? code : "internal_error", envelope.error, envelope.details);
  const location = envelope.details?.location;
  const inBody = typeof location !== "string" || location === "body";
  if (shape.protocol === "ucp") {
    const body = ucpError(err).body;
    return {
      ...body,
      messages: body.messages.map((m) => {
        const { path, ...rest } = m;
        return { ...rest, code, ...(inBody && path !== undefined ? { path } : {}) };
      }),
    };
  }
  const shaped = acpShapes(shape.version).error(err).body;
  // our code stays (2026-04-17 renames only the refusals the bridge itself gives, which do not come this way)
  const body: Record<string, unknown> = { ...shaped, code };
  if (!inBody) delete body.param;
  return body;
}
