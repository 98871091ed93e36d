/**
 * Cross-field checks read the input as written, not zod's output, so that
 * they come in the same report as any schema problem (a zod refinement runs
 * only once everything else is valid); this is how they look into it.
 */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
