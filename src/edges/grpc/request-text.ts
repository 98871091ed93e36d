import type { HandlerContext } from "@connectrpc/connect";
import { checkClientText } from "../../core/client-text.js";
import { toConnectError } from "./connect-errors.js";

/** Fields of free text, where tabs and line breaks are text; every other string is an id, a name or a filter. */
const TEXT_FIELDS: ReadonlySet<string> = new Set(["description"]);
/** Messages nest this deep at most in the services checked (a filter in a request); deeper is not walked. */
const MAX_DEPTH = 8;

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Every string of a request message checked as client text on its way to
 * the database (core/client-text.ts): map keys and values, lists and
 * nested messages, each named by its field path (`filter.target`). Bytes
 * (an uploaded file) are not text and are checked where they are read.
 * Used by the services whose requests name stored things (AdminService,
 * BatchService), so a NUL answers INVALID_ARGUMENT, never INTERNAL.
 */
export function checkRequestText(message: unknown, path = "", depth = 0): void {
  if (depth > MAX_DEPTH || typeof message !== "object" || message === null || message instanceof Uint8Array) return;
  for (const [name, value] of Object.entries(message)) {
    if (name.startsWith("$")) continue;
    const field = Array.isArray(message) ? path : path === "" ? snake(name) : `${path}.${snake(name)}`;
    const kind = TEXT_FIELDS.has(name) ? "text" : "id";
    if (typeof value === "string") checkClientText(value, field, kind);
    else if (typeof value === "object" && value !== null) {
      // A map's keys are client text too.
      if (!Array.isArray(value) && !("$typeName" in value) && !(value instanceof Uint8Array)) for (const key of Object.keys(value)) checkClientText(key, field);
      checkRequestText(value, field, depth + 1);
    }
  }
}

/**
 * A service whose every unary call checks its request's text first, once
 * the caller is known to be allowed (`authorized`): a caller that is not
 * goes straight to the call, which refuses and records it as before, so
 * nobody learns what a request may hold without the key.
 */
export function withCheckedText<I extends object>(impl: I, authorized: (ctx: HandlerContext) => boolean): I {
  const wrapped: Record<string, unknown> = { ...(impl as Record<string, unknown>) };
  for (const [method, original] of Object.entries(impl) as Array<[string, unknown]>) {
    if (typeof original !== "function") continue;
    const call = original as (req: unknown, ctx: HandlerContext) => unknown;
    wrapped[method] = (req: unknown, ctx: HandlerContext) => {
      if (authorized(ctx)) {
        try {
          checkRequestText(req);
        } catch (error) {
          return Promise.reject(toConnectError(error));
        }
      }
      return call(req, ctx);
    };
  }
  return wrapped as I;
}
