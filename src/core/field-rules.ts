/**
 * The rule for a client's request fields, one row per field an edge knows
 * about: refuse what would change the answer if ignored, carry what does
 * not to a target that understands it, or drop it and say so. Each HTTP edge
 * writes its own table once (its `*-fields.ts`); the edge reads its
 * behaviour from it where the decision is by name, and docs/streams.md is
 * generated from it (scripts/gen-field-docs.mjs), so the two cannot drift.
 */
export type FieldTreatment =
  /** Acted on: it becomes part of the canonical request. */
  | "honoured"
  /** Passed to the targets whose API takes it; dropped elsewhere and named in `sluice-dropped-params`. */
  | "carried"
  /** Accepted and not acted on; named in `sluice-dropped-params` when set. */
  | "dropped"
  /** Accepted; it describes the client, not the answer, so there is nothing to act on or to name. */
  | "ignored"
  /** A 400 naming the field (only for the values `refusedWhen` says, when given). */
  | "refused";

export interface FieldRule {
  /** As the edge's API names it: `cache_control`, `tools[].defer_loading`, header `anthropic-beta`. */
  readonly field: string;
  readonly treatment: FieldTreatment;
  /** Why, in one sentence a client author can act on; a refusal's message says it too. */
  readonly why: string;
  /** For `refused`: the values refused (others are what the gateway does anyway). Absent: any value that is set. */
  readonly refusedWhen?: (value: unknown) => boolean;
}

export type FieldTable = readonly FieldRule[];

/** The row for `field`, if the table has one. */
export function ruleFor(table: FieldTable, field: string): FieldRule | undefined {
  return table.find((rule) => rule.field === field);
}

/** The fields of `table` treated as `treatment`. */
export function fieldsTreated(table: FieldTable, ...treatments: readonly FieldTreatment[]): Set<string> {
  return new Set(table.filter((rule) => treatments.includes(rule.treatment)).map((rule) => rule.field));
}
