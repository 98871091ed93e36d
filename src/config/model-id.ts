/** Bedrock's cross-region inference profile prefixes (`us.anthropic.claude-…`). */
const BEDROCK_REGION = /^(?:us|eu|apac|global|us-gov|jp|au|ca)\./;
/** Bedrock's vendor prefixes (`anthropic.claude-…`, `meta.llama3-…`). */
const BEDROCK_VENDOR = /^(?:anthropic|amazon|meta|cohere|mistral|ai21|deepseek|openai|qwen|writer|stability)\./;
/** Bedrock's version suffix (`-v1:0`, `-v2`). */
const BEDROCK_VERSION = /-v\d+(?::\d+)?$/;
/** A snapshot date or moving tag (`-20250514`, `-2024-07-18`, `-latest`). */
const DATE_SUFFIX = /-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$/;

/**
 * A model id as the catalog compares it, whichever provider spelled it:
 * lower case; a path's last segment (`models/gemini-2.5-pro`,
 * `publishers/google/models/…`, `openai/gpt-4o` on a router); Vertex's
 * `@version`; Bedrock's region, vendor and `-v1:0`; a trailing snapshot
 * date. So `us.anthropic.claude-sonnet-4-20250514-v1:0`,
 * `claude-sonnet-4@20250514` and `claude-sonnet-4-20250514` are one model.
 */
export function normalizeModelId(model: string): string {
  let id = model.trim().toLowerCase();
  id = id.slice(id.lastIndexOf("/") + 1);
  const at = id.indexOf("@");
  if (at > 0) id = id.slice(0, at);
  if (BEDROCK_VENDOR.test(id.replace(BEDROCK_REGION, ""))) id = id.replace(BEDROCK_REGION, "").replace(BEDROCK_VENDOR, "").replace(BEDROCK_VERSION, "");
  return id.replace(DATE_SUFFIX, "");
}
