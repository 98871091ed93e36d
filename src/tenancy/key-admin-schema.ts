import { z } from "zod";
import { KEY_BOUNDS } from "../config/schema.js";
import { GatewayError } from "../core/errors.js";

/** A budget as the admin service takes it: integer micro-dollars, within the configuration's bound. */
export const budgetSchema = z.strictObject({
  usdMicros: z
    .number()
    .int()
    .positive()
    .max(KEY_BOUNDS.maxBudgetUsd * 1_000_000),
  period: z.enum(["day", "week", "month"]),
});

/** The first problem of an admin request, as INVALID_ARGUMENT naming its field. */
export function invalid(issues: readonly z.core.$ZodIssue[]): GatewayError {
  const issue = issues[0]!;
  const field = issue.path.map(String).join(".") || "request";
  return new GatewayError("invalid_request", `${field}: ${issue.message}`, { field });
}
