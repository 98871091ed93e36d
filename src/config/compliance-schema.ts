import safeRegex from "safe-regex2";
import { z } from "zod";
import { PII_KINDS } from "./pii-kinds.js";

/** What a policy does with personal data found in a request, weakest first (docs/compliance.md, "Policies"). */
export const PII_MODES = ["off", "redact", "local-only", "block"] as const;

/** A custom detector's name: lower case, short enough that its placeholder (`<NAME_12345>`) stays within MAX_PLACEHOLDER_CHARS. */
const detectorName = z.string().regex(/^[a-z][a-z0-9_]{0,13}$/, "1 to 14 lower-case letters, digits and _ (starting with a letter)");

/**
 * A policy on a key, a team or an alias; the strictest of a request's
 * policies applies. `detectors` lists the kinds it looks for (all the
 * built-in ones when unset; custom patterns only when named).
 */
export const piiPolicySchema = z.strictObject({
  mode: z
    .enum(PII_MODES)
    .meta({ description: "`off`, `redact` (placeholders upstream, values restored in the answer), `local-only` (a request with PII goes to local targets only) or `block` (refused with 400 / INVALID_ARGUMENT naming the kinds found)." }),
  detectors: z
    .array(z.string().min(1).max(32))
    .min(1)
    .max(64)
    .optional()
    .meta({ description: "The detectors to run: built-in kinds (`email`, `phone`, `card`, `iban`, `cn_id`, `us_ssn`, `ipv4`, `ipv6`, `secret`) and names of `compliance.patterns`.", unset: "every built-in kind" }),
});

/** The longest custom pattern's source: patterns are read by people, and checked at load. */
const MAX_PATTERN_CHARS = 256;

/**
 * A detector of the operator's own (an employee number, a customer id).
 * Refused at load when its pattern could backtrack catastrophically (nested
 * quantifiers: safe-regex2's star-height check) rather than found out on a
 * hostile prompt.
 */
const customPatternSchema = z
  .strictObject({
    name: detectorName
      .refine((name) => !(PII_KINDS as readonly string[]).includes(name), "is a built-in detector's name")
      .meta({ description: "1 to 14 lower-case letters, digits and `_`; the placeholder is its upper-case form (`<EMPLOYEE_1>`). Not a built-in kind's name." }),
    pattern: z.string().min(1).max(MAX_PATTERN_CHARS).meta({ description: "A JavaScript regular expression, at most 256 characters, matched case-sensitively over every text of the request." }),
  })
  .superRefine((custom, ctx) => {
    let compiled: RegExp;
    try {
      compiled = new RegExp(custom.pattern, "gu");
    } catch (error) {
      ctx.addIssue({ code: "custom", path: ["pattern"], message: `is not a valid regular expression: ${(error as Error).message}` });
      return;
    }
    if (!safeRegex(compiled)) ctx.addIssue({ code: "custom", path: ["pattern"], message: "could backtrack catastrophically (nested quantifiers); rewrite it without a repeated group that itself repeats" });
    else if (compiled.test("")) ctx.addIssue({ code: "custom", path: ["pattern"], message: "matches the empty string" });
  });

/** Custom detectors, and the audit log's writer (docs/compliance.md). */
export const complianceSchema = z
  .strictObject({
    patterns: z
      .array(customPatternSchema)
      .max(32)
      .default([])
      .meta({ description: "Detectors of your own, named in `pii.detectors` where they apply; each pattern is refused at load if it could backtrack catastrophically (nested quantifiers) or matches the empty string." }),
    audit: z
      .strictObject({
        enabled: z.boolean().optional().meta({ description: "Keep the audit log.", unset: "on when `store.postgres` is configured (an in-memory database would not keep it)" }),
        bufferMax: z
          .number()
          .int()
          .min(100)
          .max(10_000_000)
          .default(100_000)
          .meta({ description: 'Events held while the database (or Redis) is away; past it new ones are dropped and counted (`sluice_audit_events_total{sluice_audit_result="dropped"}`).' }),
        flushMs: z.number().int().min(10).max(60_000).default(500).meta({ description: "How often new events are written." }),
        batchSize: z.number().int().min(1).max(5_000).default(500).meta({ description: "Events appended per transaction at most." }),
        authFailuresPerMinute: z
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(10)
          .meta({ description: "Authentication failures recorded per remote address and minute at most; the last one recorded says `limited`, and the metrics still count every failure." }),
        refusalsPerMinute: z
          .number()
          .int()
          .min(1)
          .max(100_000)
          .default(60)
          .meta({ description: "Limit and budget refusals recorded per key, reason and minute at most; the last one recorded says `limited`, and the metrics still count every refusal." }),
      })
      .prefault({})
      .meta({ description: 'The tamper-evident audit log in `store.postgres` (docs/compliance.md, "The audit log").' }),
  })
  .prefault({});
