import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Budget, type BudgetSchema, type KeyLimits, type KeyLimitsSchema, KeySource, Period } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { count, usd } from "../format.js";

/**
 * What a form holds for a level's limits and budget: text as typed, so a
 * half-typed number stays on screen and is judged only on submit.
 */
export interface LevelFields {
  readonly rpm: string;
  readonly tpm: string;
  readonly streams: string;
  readonly usd: string;
  readonly period: PeriodName;
}

export type PeriodName = "day" | "week" | "month";
export type FieldName = keyof LevelFields;

export interface LevelValues {
  readonly limits: MessageInitShape<typeof KeyLimitsSchema>;
  readonly budget: MessageInitShape<typeof BudgetSchema> | undefined;
}

export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: Partial<Record<string, string>> };

export const EMPTY_FIELDS: LevelFields = { rpm: "", tpm: "", streams: "", usd: "", period: "month" };

const PERIODS: Readonly<Record<PeriodName, Period>> = { day: Period.DAY, week: Period.WEEK, month: Period.MONTH };
const PERIOD_NAMES: Readonly<Record<number, PeriodName>> = { [Period.DAY]: "day", [Period.WEEK]: "week", [Period.MONTH]: "month" };

/** The admin API's own bounds (proto KeyLimits, Budget), checked here so an obvious slip never costs a round trip. */
const MAX = { rpm: 1_000_000, tpm: 1_000_000_000, streams: 1_000_000, usd: 1_000_000_000 } as const;

/** The admin API's name rule: 1 to 64 letters, digits and . _ - starting with a letter or digit. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function nameProblem(name: string): string | undefined {
  if (name === "") return "A name is required.";
  if (!NAME.test(name)) return "1 to 64 letters, digits and . _ - , starting with a letter or digit.";
  return undefined;
}

function whole(text: string, max: number): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  if (!/^\d+$/.test(t)) return "A whole number, or empty for no limit.";
  const n = Number(t);
  if (n < 1 || n > max) return `From 1 to ${count(max)}.`;
  return n;
}

/** Dollars as typed to millionths, exactly (no float on the way): "7.5" → 7500000n. */
function micros(text: string): bigint | string | undefined {
  const t = text.trim().replace(/^\$/, "");
  if (t === "") return undefined;
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(t);
  if (!m) return "US dollars, e.g. 25 or 7.50 (at most 6 decimals), or empty for no budget.";
  const value = BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0"));
  if (value === 0n) return "More than $0, or empty for no budget.";
  if (value > BigInt(MAX.usd) * 1_000_000n) return `At most $${count(MAX.usd)}.`;
  return value;
}

/** Limits and budget from what was typed, or every field's problem. */
export function parseLevel(fields: LevelFields): Parsed<LevelValues> {
  const rpm = whole(fields.rpm, MAX.rpm);
  const tpm = whole(fields.tpm, MAX.tpm);
  const streams = whole(fields.streams, MAX.streams);
  const budget = micros(fields.usd);
  const problems: Partial<Record<FieldName, string>> = {};
  if (typeof rpm === "string") problems.rpm = rpm;
  if (typeof tpm === "string") problems.tpm = tpm;
  if (typeof streams === "string") problems.streams = streams;
  if (typeof budget === "string") problems.usd = budget;
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      limits: {
        ...(typeof rpm === "number" ? { requestsPerMinute: rpm } : {}),
        ...(typeof tpm === "number" ? { tokensPerMinute: BigInt(tpm) } : {}),
        ...(typeof streams === "number" ? { concurrentStreams: streams } : {}),
      },
      budget: typeof budget === "bigint" ? { usdMicros: budget, period: PERIODS[fields.period] } : undefined,
    },
  };
}

/** Aliases typed as a list (commas or spaces between them); empty means every alias. */
export function parseModels(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function dollars(value: bigint): string {
  const fraction = value % 1_000_000n === 0n ? "" : `.${(value % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")}`;
  return `${value / 1_000_000n}${fraction}`;
}

/** A level's current limits and budget as a form starts from them (the edit form). */
export function fieldsOf(limits: KeyLimits | undefined, budget: Budget | undefined): LevelFields {
  return {
    rpm: limits?.requestsPerMinute?.toString() ?? "",
    tpm: limits?.tokensPerMinute?.toString() ?? "",
    streams: limits?.concurrentStreams?.toString() ?? "",
    usd: budget ? dollars(budget.usdMicros) : "",
    period: periodName(budget?.period),
  };
}

/** A budget's period by name: month when unspecified, as the gateway reads it. */
export function periodName(period: Period | undefined): PeriodName {
  return PERIOD_NAMES[period ?? Period.MONTH] ?? "month";
}

/** Limits as a table cell says them. */
export function limitsText(limits: KeyLimits | undefined): string {
  const parts = [
    limits?.requestsPerMinute !== undefined ? `${count(limits.requestsPerMinute)} req/min` : undefined,
    limits?.tokensPerMinute !== undefined ? `${count(limits.tokensPerMinute)} tok/min` : undefined,
    limits?.concurrentStreams !== undefined ? `${count(limits.concurrentStreams)} streams` : undefined,
  ].filter((p) => p !== undefined);
  return parts.length > 0 ? parts.join(" · ") : "none";
}

/** A budget as a table cell says it. */
export function budgetText(budget: Budget | undefined): string {
  return budget ? `${usd(budget.usdMicros)} / ${periodName(budget.period)}` : "none";
}

/** Where a level is defined, and so where it is changed. */
export function sourceText(source: KeySource): string {
  return source === KeySource.RUNTIME ? "admin API" : "configuration";
}
