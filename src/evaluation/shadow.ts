import type { Meter } from "@opentelemetry/api";
import { randomHex } from "../batch/batch-store.js";
import type { CallLayer } from "../call/call-layer.js";
import type { ShadowSettings } from "../config/settings.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { Database } from "../db/database.js";
import { causeOf } from "../drain/batch-writer.js";
import type { Logger } from "../logging/logger.js";
import type { AnswerSummary } from "../recording/answer-summary.js";
import { type RecordingPlan, withoutSecrets } from "../recording/recorder.js";
import type { Principal } from "../tenancy/principal.js";
import { answerOf, type PriceOf } from "./answer-call.js";
import { type AnswerStats, type CandidateComparison, compareCandidate, type Recorded, type Replayed, recordedStats } from "./evaluation-report.js";

/** Longest a mirrored call may run: nobody waits on it, but nothing runs unbounded. */
export const SHADOW_TIMEOUT_MS = 10 * 60_000;
/** Pairs a shadow report reads at most (the newest in its range). */
export const MAX_SHADOW_PAIRS = 50_000;

export interface ShadowRunner {
  /** Mirrors a completed call to the candidate, unless the alias already has `maxInFlight` mirrored calls running here. */
  readonly start: (settings: ShadowSettings, plan: RecordingPlan, live: AnswerSummary) => void;
  /** The live answers in a range and each candidate's answers to the same requests. */
  report(alias: string, range: { readonly startMs?: number; readonly endMs?: number }): Promise<ShadowReport>;
  /** Resolves once the mirrored calls running now have ended and their pairs are written (tests; a report right after traffic). */
  idle(): Promise<void>;
  /** Aborts the mirrored calls still running and waits for them to end. */
  close(): Promise<void>;
}

export interface ShadowReport {
  readonly alias: string;
  readonly live: AnswerStats;
  readonly candidates: ReadonlyArray<CandidateComparison & { readonly alias: string }>;
}

export interface ShadowOptions {
  readonly calls: CallLayer;
  readonly database: () => Promise<Database>;
  /** The principal of the configured key named `name`; undefined when there is none. */
  readonly principalOf: (name: string) => Principal | undefined;
  readonly priceOf: PriceOf;
  readonly logger: Logger;
  readonly meter?: Meter;
}

/**
 * Shadow traffic (models.<alias>.shadow): once a sampled call completed and
 * its caller has the answer, the same request runs again on the candidate
 * alias, at batch priority, as the configured key (charged to it), off
 * every caller's path; the pair is written to the database for
 * GetShadowReport. At most `maxInFlight` mirrored calls per alias run on a
 * replica; past that a call is not mirrored (counted), so shadowing never
 * queues work without bound.
 */
export function createShadowRunner(options: ShadowOptions): ShadowRunner {
  const inFlight = new Map<string, number>();
  const running = new Set<Promise<void>>();
  const controllers = new Set<AbortController>();
  const counter = options.meter?.createCounter("sluice.shadow.calls", {
    unit: "{call}",
    description: "Mirrored calls, by result: completed, failed (the candidate refused or failed), skipped (maxInFlight reached), lost (the pair could not be written).",
  });
  let closed = false;

  const write = async (id: string, settings: ShadowSettings, plan: RecordingPlan, live: AnswerSummary, shadow: AnswerSummary | undefined, errorCode: string | undefined) => {
    const clean = withoutSecrets(plan.request, live);
    const cleanShadow = shadow ? withoutSecrets(plan.request, shadow).answer : undefined;
    const db = await options.database();
    await db.query("INSERT INTO sluice_shadow (id, at, alias, candidate, request, live, shadow, error_code) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING", [
      id,
      new Date().toISOString(),
      plan.alias,
      settings.alias,
      JSON.stringify(clean.request),
      JSON.stringify(clean.answer),
      cleanShadow ? JSON.stringify(cleanShadow) : null,
      errorCode ?? null,
    ]);
  };

  const mirror = async (settings: ShadowSettings, plan: RecordingPlan, live: AnswerSummary) => {
    const controller = new AbortController();
    controllers.add(controller);
    const timer = setTimeout(() => controller.abort(new GatewayError("deadline_exceeded", `the mirrored call ran past ${SHADOW_TIMEOUT_MS} ms`)), SHADOW_TIMEOUT_MS);
    const id = `shadow_${randomHex()}`;
    let shadow: AnswerSummary | undefined;
    let errorCode: string | undefined;
    try {
      const principal = settings.key === undefined ? undefined : options.principalOf(settings.key);
      if (settings.key !== undefined && !principal) throw new GatewayError("unauthenticated", "the shadow key is no longer configured");
      const call = { requestId: id, edge: "shadow", signal: controller.signal, tags: { shadow_of: plan.alias }, background: true };
      shadow = await answerOf(options.calls, { ...plan.request, model: settings.alias }, principal, call, options.priceOf);
    } catch (error) {
      errorCode = toGatewayError(error).code;
    } finally {
      clearTimeout(timer);
      controllers.delete(controller);
    }
    // A close cut it off: that is no answer of the candidate's, and nothing to compare.
    if (closed && errorCode !== undefined) return;
    try {
      await write(id, settings, plan, live, shadow, errorCode);
      counter?.add(1, { "sluice.shadow.result": shadow ? "completed" : "failed" });
    } catch (error) {
      counter?.add(1, { "sluice.shadow.result": "lost" });
      options.logger.warn({ event: "shadow.write_failed", alias: plan.alias, cause: causeOf(error) });
    }
  };

  return {
    start(settings, plan, live) {
      const now = inFlight.get(plan.alias) ?? 0;
      if (closed || now >= settings.maxInFlight) {
        counter?.add(1, { "sluice.shadow.result": "skipped" });
        return;
      }
      inFlight.set(plan.alias, now + 1);
      const run = mirror(settings, plan, live).finally(() => {
        inFlight.set(plan.alias, (inFlight.get(plan.alias) ?? 1) - 1);
        running.delete(run);
      });
      running.add(run);
    },
    async report(alias, range) {
      const db = await options.database();
      const { rows } = await db.query<{ id: string; candidate: string; request: string; live: string; shadow: string | null; error_code: string | null }>(
        `SELECT id, candidate, request, live, shadow, error_code FROM sluice_shadow
         WHERE alias = $1 AND ($2::timestamptz IS NULL OR at >= $2) AND ($3::timestamptz IS NULL OR at < $3)
         ORDER BY at DESC LIMIT $4`,
        [alias, range.startMs === undefined ? null : new Date(range.startMs).toISOString(), range.endMs === undefined ? null : new Date(range.endMs).toISOString(), MAX_SHADOW_PAIRS],
      );
      const byCandidate = new Map<string, { recorded: Recorded[]; replayed: Map<string, Replayed> }>();
      const live: Recorded[] = [];
      for (const r of rows) {
        const entry: Recorded = { id: String(r.id), request: JSON.parse(String(r.request)), answer: JSON.parse(String(r.live)) as AnswerSummary };
        live.push(entry);
        const side = byCandidate.get(String(r.candidate)) ?? { recorded: [], replayed: new Map<string, Replayed>() };
        side.recorded.push(entry);
        side.replayed.set(entry.id, r.shadow === null ? { ok: false, code: String(r.error_code ?? "unknown") } : { ok: true, answer: JSON.parse(String(r.shadow)) as AnswerSummary });
        byCandidate.set(String(r.candidate), side);
      }
      const candidates = [...byCandidate.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([candidate, side]) => ({ alias: candidate, ...compareCandidate(side.recorded, side.replayed) }));
      return { alias, live: recordedStats(live), candidates };
    },
    async idle() {
      await Promise.allSettled([...running]);
    },
    async close() {
      closed = true;
      for (const controller of controllers) controller.abort(new GatewayError("shutting_down", "the gateway is shutting down"));
      await Promise.allSettled([...running]);
    },
  };
}
