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

/**
 * C0 and C1 control characters (NUL, CR and LF among them) and unpaired
 * surrogates: text that breaks what it is written into (PostgreSQL's jsonb
 * refuses NUL and lone surrogates; a CSV report or a header line breaks on
 * CR and LF). Client text kept for reports (tags) must hold none.
 */
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f]|\p{Cs}/u;

/** Whether `text` holds a control character or an unpaired surrogate. */
export function holdsUnsafeText(text: string): boolean {
  return UNSAFE_TEXT.test(text);
}

/** What a refusal says of such text: never the text itself. */
export const UNSAFE_TEXT_WORDS = "a control character (NUL, CR, LF or another C0 or C1 code) or an unpaired surrogate";
