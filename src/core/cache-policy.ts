/** What a caller lets the response cache do for one request. */
export type CachePolicy = "default" | "no_lookup" | "no_store" | "bypass";

/**
 * HTTP's `Cache-Control` request directives, as OpenAI-shaped callers send
 * them: `no-store` (neither look up nor store) wins over `no-cache` (skip
 * the lookup, store the fresh answer); anything else is the default.
 */
export function cachePolicyFromHeader(value: string | undefined): CachePolicy {
  if (!value) return "default";
  const directives = value
    .toLowerCase()
    .split(",")
    .map((d) => d.trim());
  if (directives.includes("no-store")) return "bypass";
  if (directives.includes("no-cache")) return "no_lookup";
  return "default";
}
