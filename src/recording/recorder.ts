import type { Meter } from "@opentelemetry/api";
import { redactRequest } from "../compliance/redact-request.js";
import type { ModelRoute, RouteTarget, ShadowSettings } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { Database } from "../db/database.js";
import { causeOf } from "../drain/batch-writer.js";
import { DEAD_LETTER_TRIES, deadLetterCounter, writeDeadLetters } from "../drain/dead-letters.js";
import { createRetryingBuffer } from "../drain/retrying-buffer.js";
import type { Logger } from "../logging/logger.js";
import { type AnswerCapture, type AnswerSummary, createAnswerCapture } from "./answer-summary.js";

/** One kept call: what the provider was asked and what it answered. */
export interface Recording {
  readonly id: string;
  readonly at: Date;
  readonly alias: string;
  readonly keyName?: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly request: ChatRequest;
  readonly answer: AnswerSummary;
}

/** A call the draw kept: it watches the deltas and is offered once the call completed. */
export interface RecordingPlan {
  readonly capture: AnswerCapture;
  /** Kept as a recording (the alias records and its draw kept it). */
  readonly record: boolean;
  /** Mirrored to a candidate once completed (the alias shadows and its draw kept it). */
  readonly shadow?: ShadowSettings;
  readonly alias: string;
  readonly request: ChatRequest;
  readonly id: string;
  readonly keyName?: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** What the pipeline tells the recorder about a call. */
export interface RecordedCall {
  readonly requestId: string;
  /** A batch line or a replay: never kept (a replay of a replay would compare the gateway with itself). */
  readonly background?: boolean;
  readonly keyName?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * The call was kept on local targets (its policy's `keptLocal`), or personal
   * data was found and sent as written: such a call is never kept, nor
   * mirrored to a shadow candidate, which need not be local.
   */
  readonly keptLocal: boolean;
  /** limits.maxAnswerBytes: an answer past it is not kept (dropped and counted as `too_large`). */
  readonly maxAnswerBytes?: number;
}

export interface Recorder {
  /** A plan when `route` records and the draw keeps this call; undefined otherwise (the common case, decided without allocating). */
  plan(route: ModelRoute, call: RecordedCall, request: ChatRequest): RecordingPlan | undefined;
  /** Keeps a completed call's recording (written off the request path, in batches). */
  offer(plan: RecordingPlan, servedBy: RouteTarget): void;
  /** Writes what waits now (tests, and a report asked for right after a call). */
  flush(): Promise<void>;
  close(graceMs: number): Promise<number>;
}

/** Runs a completed call again on its alias's shadow candidate (evaluation/shadow.ts), given the live answer. */
export type ShadowStarter = (settings: ShadowSettings, plan: RecordingPlan, live: AnswerSummary) => void;

export interface RecorderOptions {
  readonly database: () => Promise<Database>;
  /** Where sampled calls of aliases with `shadow` go once completed. */
  readonly shadow?: ShadowStarter;
  readonly logger: Logger;
  readonly meter?: Meter;
  readonly random?: () => number;
  readonly now?: () => number;
  /** Recordings waiting in memory at most while the database is away; past it new ones are dropped and counted. */
  readonly maxBuffered?: number;
  readonly flushMs?: number;
}

/** Secrets are replaced in every recording, whatever the alias's PII policy says. */
const SECRETS = { mode: "redact" as const, kinds: new Set(["secret"]), custom: [], localOnly: false, keptLocal: false };

/** The request and answer with secrets replaced by placeholders, one vault for both so they agree. */
export function withoutSecrets(request: ChatRequest, answer: AnswerSummary): { readonly request: ChatRequest; readonly answer: AnswerSummary } {
  const redacted = redactRequest(request, SECRETS);
  const redact = (text: string) => redacted.vault.redact(text, SECRETS.kinds);
  return {
    request: redacted.request,
    answer: { ...answer, text: redact(answer.text), toolCalls: answer.toolCalls.map((c) => ({ name: c.name, arguments: redact(c.arguments) })) },
  };
}

const day = (ms: number) => Math.floor(ms / 86_400_000);

/**
 * Evaluation replay's recorder: a sampled share of an alias's completed
 * calls (models.<alias>.record), each its request as the provider saw it
 * (PII placeholders under a redact policy) and its folded answer, with
 * secrets always replaced, written to the database in batches from a
 * bounded buffer. Failed, cancelled and background calls are never kept,
 * nor calls kept local or whose personal data went out as written: neither
 * mirrored nor recorded.
 */
export function createRecorder(options: RecorderOptions): Recorder {
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const kept = new Map<string, { day: number; count: number }>();
  const counter = options.meter?.createCounter("sluice.recordings", {
    unit: "{recording}",
    description: "Calls kept for evaluation replay, by result: written, dropped (buffer full), capped (the alias's maxPerDay), too_large (past limits.maxAnswerBytes).",
  });

  const countDeadLetters = deadLetterCounter(options.meter, "recording");
  const write = async (batch: readonly Recording[]) => {
    const db = await options.database();
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO sluice_recordings (id, at, alias, key_name, tags, request, answer)
       SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[])
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      [
        batch.map((r) => r.id),
        batch.map((r) => r.at.toISOString()),
        batch.map((r) => r.alias),
        batch.map((r) => r.keyName ?? null),
        batch.map((r) => JSON.stringify(r.tags)),
        batch.map((r) => JSON.stringify(r.request)),
        batch.map((r) => JSON.stringify(r.answer)),
      ],
    );
    counter?.add(rows.length, { "sluice.recording.result": "written" });
    return { written: rows.length, duplicates: batch.length - rows.length };
  };
  const buffer = createRetryingBuffer<Recording>({
    maxBuffered: options.maxBuffered ?? 10_000,
    batchSize: 200,
    flushMs: options.flushMs ?? 1_000,
    write,
    // A recording the database refuses (a NUL in a tag) is kept aside after a few tries: it never holds the others.
    isolation: {
      idOf: (r) => r.id,
      payloadOf: (r) => JSON.stringify(r),
      maxTries: DEAD_LETTER_TRIES,
      deadLetter: async (letters) => writeDeadLetters(await options.database(), "recording", letters),
    },
    onEvent: (event) => {
      if (event.type === "failed") options.logger.warn({ event: "recording.write_failed", cause: event.cause, waiting: event.waiting });
      if (event.type === "dead_lettered") {
        countDeadLetters(event.letters.length);
        for (const letter of event.letters) options.logger.error({ event: "recording.dead_lettered", entryId: letter.id, code: letter.code });
      }
      if (event.type === "dropped") {
        counter?.add(event.count, { "sluice.recording.result": "dropped" });
        options.logger.warn({ event: "recording.dropped", total: event.total });
      }
    },
  });
  buffer.start();

  return {
    plan(route, call, request) {
      if (call.background || call.keptLocal || (!route.record && !route.shadow)) return undefined;
      const shadow = route.shadow && options.shadow && (route.shadow.sampleRate >= 1 || random() < route.shadow.sampleRate) ? route.shadow : undefined;
      let record = false;
      if (route.record && (route.record.sampleRate >= 1 || random() < route.record.sampleRate)) {
        // Counted when drawn, so calls in flight together cannot pass the cap; one that fails uses its place.
        const today = day(now());
        const seen = kept.get(route.alias);
        if (!seen || seen.day !== today) {
          kept.set(route.alias, { day: today, count: 1 });
          record = true;
        } else if (seen.count < route.record.maxPerDay) {
          seen.count++;
          record = true;
        } else counter?.add(1, { "sluice.recording.result": "capped" });
      }
      if (!record && !shadow) return undefined;
      return {
        capture: createAnswerCapture(undefined, undefined, call.maxAnswerBytes),
        record,
        ...(shadow ? { shadow } : {}),
        alias: route.alias,
        request,
        id: call.requestId,
        ...(call.keyName === undefined ? {} : { keyName: call.keyName }),
        tags: call.tags ?? {},
      };
    },
    offer(plan, servedBy) {
      if (plan.capture.tooLarge) {
        // Neither kept nor mirrored: its answer was let go past limits.maxAnswerBytes.
        counter?.add(1, { "sluice.recording.result": "too_large" });
        options.logger.warn({ event: "recording.too_large", requestId: plan.id, alias: plan.alias });
        return;
      }
      if (plan.shadow) options.shadow!(plan.shadow, plan, plan.capture.summary(servedBy.price));
      if (!plan.record) return;
      try {
        const clean = withoutSecrets(plan.request, plan.capture.summary(servedBy.price));
        buffer.add({ id: plan.id, at: new Date(now()), alias: plan.alias, ...(plan.keyName === undefined ? {} : { keyName: plan.keyName }), tags: plan.tags, ...clean });
      } catch (error) {
        options.logger.warn({ event: "recording.failed", cause: causeOf(error) });
      }
    },
    flush: () => buffer.flush(),
    close: (graceMs) => buffer.close(graceMs),
  };
}
