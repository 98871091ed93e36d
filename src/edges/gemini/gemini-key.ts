import { type AnyRequest, headerOf } from "../../http/node-http.js";

/**
 * The caller's key, from where Google's clients put it: `x-goog-api-key`
 * (the SDKs, Gemini CLI), `?key=` (curl examples, older clients), or a
 * Bearer `authorization` (OAuth-style clients, and Sluice's own habit).
 * The query is never logged: the access line names the route, not the URL.
 */
export function credentialOf(req: AnyRequest): string | undefined {
  const header = headerOf(req, "x-goog-api-key");
  if (header !== undefined && header !== "") return `Bearer ${header}`;
  const query = (req.url ?? "").split("?")[1];
  const key = query === undefined ? null : new URLSearchParams(query).get("key");
  if (key !== null && key !== "") return `Bearer ${key}`;
  return headerOf(req, "authorization");
}
