import type { z } from "zod";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { pathSegment } from "../../core/structure-limits.js";

/** A 400 naming the field at fault the Responses way (`input[2].content[0].image_url`), as OpenAI's own 400s do. */
export function invalidField(field: string, problem: string): never {
  const at = clipClientValue(field);
  throw new GatewayError("invalid_request", `${at}: ${problem}`, { field: at });
}

/**
 * `value` checked against `schema`; the first problem becomes a 400 whose
 * field is `path` followed by the problem's own path. Paths run through
 * client-chosen keys, so they are cut like any echoed value.
 */
export function parseAt<S extends z.ZodType>(schema: S, value: unknown, path: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.reduce<string>((out, key) => pathSegment(out, typeof key === "number" ? key : String(key)), path);
  const problem = clipClientValue(issue.message);
  if (field === "") throw new GatewayError("invalid_request", `request body: ${problem}`, { field: "body" });
  return invalidField(field, problem);
}
