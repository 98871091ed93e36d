import type { ChatRequest } from "../core/chat-request.js";
import type { AnswerSummary } from "../recording/answer-summary.js";

/** What a set of answers cost and how they went (the recorded ones, or one candidate's replays). */
export interface AnswerStats {
  readonly requests: number;
  readonly answered: number;
  readonly errors: number;
  readonly errorRate: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costMicros: number;
  readonly ttftMs: { readonly p50: number; readonly p95: number };
  readonly durationMs: { readonly p50: number; readonly p95: number };
  readonly finishReasons: Readonly<Record<string, number>>;
}

/** One candidate against the recorded answers. */
export interface CandidateComparison {
  readonly stats: AnswerStats;
  readonly exactMatchRate: number;
  /** Of recorded answers that called tools and were answered: the share with the same tools and JSON-equal arguments. */
  readonly toolCallAgreement?: number;
  readonly toolCallCases: number;
  /** Of answered requests that asked for JSON: the share that is valid. */
  readonly jsonValidRate?: number;
  readonly jsonCases: number;
  /** Mean cosine similarity of answer embeddings with the recorded answers' (when an embedding alias was named). */
  readonly semanticSimilarity?: number;
  readonly semanticCases?: number;
}

/** One dataset entry: the recorded request and answer. */
export interface Recorded {
  readonly id: string;
  readonly request: ChatRequest;
  readonly answer: AnswerSummary;
}

/** A replay's outcome: its answer, or that it failed. */
export type Replayed = { readonly ok: true; readonly answer: AnswerSummary } | { readonly ok: false; readonly code: string };

/** The nearest-rank percentile of sorted values; 0 for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Sums and percentiles over `requests` entries, of which `answers` were answered and `errors` failed. */
export function answerStats(requests: number, answers: readonly AnswerSummary[], errors: number): AnswerStats {
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const ttft = sorted(answers.flatMap((a) => (a.ttftMs === undefined ? [] : [a.ttftMs])));
  const duration = sorted(answers.map((a) => a.durationMs));
  const finishReasons: Record<string, number> = {};
  for (const a of answers) finishReasons[a.finishReason] = (finishReasons[a.finishReason] ?? 0) + 1;
  const ended = answers.length + errors;
  return {
    requests,
    answered: answers.length,
    errors,
    errorRate: ended === 0 ? 0 : errors / ended,
    inputTokens: answers.reduce((n, a) => n + a.usage.inputTokens, 0),
    outputTokens: answers.reduce((n, a) => n + a.usage.outputTokens, 0),
    costMicros: answers.reduce((n, a) => n + a.costMicros, 0),
    ttftMs: { p50: percentile(ttft, 50), p95: percentile(ttft, 95) },
    durationMs: { p50: percentile(duration, 50), p95: percentile(duration, 95) },
    finishReasons,
  };
}

/** JSON with object keys sorted, so argument objects compare by value whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

const argumentsOf = (text: string): string => {
  try {
    return canonical(JSON.parse(text));
  } catch {
    return text.trim();
  }
};

/** The same tools in the same order, with JSON-equal arguments. */
export function sameToolCalls(a: AnswerSummary["toolCalls"], b: AnswerSummary["toolCalls"]): boolean {
  return a.length === b.length && a.every((call, i) => call.name === b[i]!.name && argumentsOf(call.arguments) === argumentsOf(b[i]!.arguments));
}

/**
 * Whether an answer satisfies the request's response_format: it parses as
 * JSON, and with a schema is an object holding the schema's required
 * top-level properties. A deliberately small check (no full JSON Schema
 * validator): it catches prose, truncation and missing fields, the ways
 * a weaker model fails structured output.
 */
export function validJson(request: ChatRequest, text: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  const format = request.responseFormat;
  if (format?.type !== "json_schema") return true;
  const required = Array.isArray(format.schema.required) ? format.schema.required.filter((r): r is string => typeof r === "string") : [];
  if (format.schema.type === "object" || required.length > 0) {
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return false;
    return required.every((key) => key in (parsed as Record<string, unknown>));
  }
  return true;
}

const asksForJson = (request: ChatRequest) => request.responseFormat !== undefined && request.responseFormat.type !== "text";

/** One candidate's replays, by recording id, compared with the recorded answers. */
export function compareCandidate(recorded: readonly Recorded[], replayed: ReadonlyMap<string, Replayed>): CandidateComparison {
  const answers: AnswerSummary[] = [];
  let errors = 0;
  let exact = 0;
  let toolCases = 0;
  let toolAgree = 0;
  let jsonCases = 0;
  let jsonValid = 0;
  for (const entry of recorded) {
    const replay = replayed.get(entry.id);
    if (!replay) continue;
    if (!replay.ok) {
      errors++;
      continue;
    }
    const answer = replay.answer;
    answers.push(answer);
    if (answer.text.trim() === entry.answer.text.trim()) exact++;
    if (entry.answer.toolCalls.length > 0) {
      toolCases++;
      if (sameToolCalls(entry.answer.toolCalls, answer.toolCalls)) toolAgree++;
    }
    if (asksForJson(entry.request)) {
      jsonCases++;
      if (validJson(entry.request, answer.text)) jsonValid++;
    }
  }
  return {
    stats: answerStats(recorded.length, answers, errors),
    exactMatchRate: answers.length === 0 ? 0 : exact / answers.length,
    ...(toolCases > 0 ? { toolCallAgreement: toolAgree / toolCases } : {}),
    toolCallCases: toolCases,
    ...(jsonCases > 0 ? { jsonValidRate: jsonValid / jsonCases } : {}),
    jsonCases,
  };
}

/** The recorded side, the baseline every candidate is compared with. */
export function recordedStats(recorded: readonly Recorded[]): AnswerStats {
  return answerStats(
    recorded.length,
    recorded.map((r) => r.answer),
    0,
  );
}

/** Cosine similarity of two vectors of one model; 0 when either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Pairs of (recorded, replayed) answer texts a semantic comparison embeds: both answered, both with text. */
export function textPairs(recorded: readonly Recorded[], replayed: ReadonlyMap<string, Replayed>): Array<readonly [string, string]> {
  return recorded.flatMap((entry) => {
    const replay = replayed.get(entry.id);
    if (!replay?.ok || entry.answer.text.trim() === "" || replay.answer.text.trim() === "") return [];
    return [[entry.answer.text, replay.answer.text] as const];
  });
}
