import type { ResponseCache } from "../../cache/response-cache.js";
import type { ComplianceDecision } from "../../compliance/compliance-decision.js";
import type { Recorder } from "../../recording/recorder.js";
import type { Telemetry } from "../../telemetry/telemetry.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import type { Stage } from "../stage.js";
import type { StreamCut } from "../stream-cut.js";
import type { StreamRegistry } from "../stream-registry.js";
import { allowlistStage } from "./allowlist.js";
import { answerLimitStage } from "./answer-limit.js";
import { cacheStage } from "./cache.js";
import { chargeStage } from "./charge.js";
import { complianceStage } from "./compliance.js";
import { type ContextDeps, contextStage } from "./context.js";
import { overheadStage } from "./overhead.js";
import { recordStage } from "./record.js";
import { redactStage } from "./redact.js";
import { routeStage } from "./route.js";
import { slotStage } from "./slot.js";
import { systemPromptStage } from "./system-prompt.js";
import { telemetryStage } from "./telemetry.js";
import { usageStage } from "./usage.js";

/** What the stages stand on: the gateway's shared parts, each optional where a gateway may run without it. */
export interface StageDeps extends ContextDeps {
  readonly telemetry: Telemetry;
  readonly registry: StreamRegistry;
  readonly tenancy?: Pick<Tenancy, "charge">;
  readonly cache?: ResponseCache;
  readonly recorder?: Recorder;
  readonly onCompliance?: (decision: ComplianceDecision) => void;
  readonly onCut?: (cut: StreamCut) => void;
}

/**
 * The middle of every call, in order: each stage opens once per call, in
 * this order, and its part ends in the reverse order, however the call
 * ended. A new feature is one stage file and one line here.
 */
export function chatStages(deps: StageDeps): readonly Stage[] {
  return [
    redactStage(), //            personal data screened first: no stage after it, telemetry included, sees the raw prompt
    telemetryStage(deps.telemetry), // the stream observed from here on: refusals are counted like answers
    overheadStage(), //          wraps telemetry's observer: the attempts stamp when the call waited on its upstream (sluice-overhead-ms)
    allowlistStage(deps.tenancy), // the key's allowlist before the alias is looked up: a key learns nothing of aliases it may not use
    routeStage(), //             the alias's targets, in the configuration current when the call started
    complianceStage(deps.onCompliance), // the PII policy's verdict: refused, or narrowed to local targets
    slotStage(deps.registry), // a stream slot before any wait on I/O: a drain waits for the call, shutdown can end it
    systemPromptStage(), //      the operator's instructions, unscreened, before the fit and the charge count them
    contextStage(deps), //       fitted to the targets' windows before the charge reserves for it
    chargeStage(), //            limits and budgets, reserved in one round trip, before any answer: a hit is admitted too
    cacheStage(deps.cache), //   a hit answers here; a miss is captured for the cache
    recordStage(deps.recorder), // a sample of completed calls for evaluation and shadow traffic (not hits, not cut answers)
    answerLimitStage(deps.onCut), // the answer held to what was reserved: max_tokens, the key's budget
    usageStage(), //             the gateway's count before finish when the provider gave none
  ];
}

/** The stages an embedding call takes: the same table without those that act on an answer's deltas or a conversation. */
const EMBEDDING_STAGES = new Set(["redact", "telemetry", "overhead", "allowlist", "route", "compliance", "slot", "charge"]);

export function embeddingStages(deps: StageDeps): readonly Stage[] {
  return chatStages(deps).filter((stage) => EMBEDDING_STAGES.has(stage.name));
}
