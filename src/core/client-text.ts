import { GatewayError } from "./errors.js";

/**
 * Longest client-supplied value the gateway ever echoes back (in an error
 * message, a log line, a header). Anything longer is cut: a 70 KB model name
 * once produced a gRPC trailer too large to send, so the client saw an
 * HTTP/2 FRAME_SIZE_ERROR instead of its status.
 */
export const MAX_ECHO_CHARS = 256;

/**
 * A client value as it may appear inside a message: quoted, control
 * characters escaped, and cut to `max` characters (with the original length
 * said, so nobody mistakes the cut for the value).
 */
export function quoteClientValue(value: string, max = MAX_ECHO_CHARS): string {
  const cut = value.length > max ? value.slice(0, max) : value;
  const escaped = JSON.stringify(cut);
  return value.length > max ? `${escaped.slice(0, -1)}…" (${value.length} characters)` : escaped;
}

/** A client value as a log field: cut, never quoted. */
export function clipClientValue(value: string, max = MAX_ECHO_CHARS): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

/** Control characters (C0, DEL, C1) and lone surrogates: no id, name or filter holds one, and PostgreSQL stores no NUL at all. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** The same in free text (a description), where tabs and line breaks are text. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What a client's value may hold: `id` (ids, names, filters) no control character at all; `text` tabs and line breaks. */
export type ClientTextKind = "id" | "text";

/** The first control character of `value` as `U+0000`, or undefined when it has none. */
export function controlCharacterIn(value: string, kind: ClientTextKind = "id"): string | undefined {
  const found = (kind === "id" ? CONTROL : CONTROL_IN_TEXT).exec(value);
  return found ? `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}` : undefined;
}

/**
 * The one check of client text on its way to the database (or into an id
 * that names a stored thing): a value with a control character is refused
 * with `invalid_request` naming the field and the character, never echoing
 * the value. A NUL reaching PostgreSQL would be a 500, or a record that
 * stops a writer.
 */
export function checkClientText<T extends string>(value: T, field: string, kind: ClientTextKind = "id"): T {
  const found = controlCharacterIn(value, kind);
  if (found !== undefined) throw new GatewayError("invalid_request", `${field}: holds a control character (${found}), which ${kind === "id" ? "an id, a name or a filter" : "this text"} may not`, { field });
  return value;
}

/** Client text kept for display only (a file's name): control characters and lone surrogates become U+FFFD rather than refuse the upload. */
export function cleanClientText(value: string): string {
  return value.replace(new RegExp(CONTROL.source, "g"), "\uFFFD");
}

/** What a refusal says of such text: never the text itself. */
export const UNSAFE_TEXT_WORDS = "a control character (NUL, CR, LF or another C0 or C1 code) or an unpaired surrogate";

/** Whether `text` holds a control character or an unpaired surrogate: text that breaks what it is written into (jsonb, a CSV report, a header line). */
export function holdsUnsafeText(text: string): boolean {
  return controlCharacterIn(text) !== undefined;
}
