import type { Telemetry } from "../../telemetry/telemetry.js";
import type { Stage } from "../stage.js";

/**
 * The stream's telemetry (span, metrics, the access line's facts, the
 * console's live figures). After `redact`: what a trace can capture is the
 * screened prompt, and a call kept local puts no content on a span at all.
 * Before the allowlist: refusals are counted like any other outcome.
 */
export function telemetryStage(telemetry: Telemetry): Stage {
  return {
    name: "telemetry",
    open(call) {
      const { ctx, routes, request } = call;
      const observer = telemetry.stream({
        requestId: ctx.requestId,
        edge: ctx.edge,
        // Metrics and logs name configured aliases only: a client's free text would grow their label sets.
        alias: routes.has(request.model) ? request.model : "unknown",
        request,
        facts: call.summary.facts,
        ...(call.operation === "embeddings" ? { operation: "embeddings" as const } : {}),
        ...(ctx.trace ? { parent: ctx.trace } : {}),
        ...(call.screened.policy.keptLocal ? { withholdContent: true } : {}),
      });
      call.observer = observer;
      return { tap: (delta) => observer.delta(delta), end: ({ failure }) => observer.ended(failure) };
    },
  };
}
