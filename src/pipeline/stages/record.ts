import type { Recorder } from "../../recording/recorder.js";
import { routeOf, type Stage } from "../stage.js";

/**
 * Keeps a sample of completed calls of aliases that record or shadow
 * (recording/recorder.ts): evaluation replay and shadow traffic. After the
 * cache: a hit is no call to learn from. A call kept local, or one whose
 * prompt held personal data that was not redacted, is never copied
 * off-local. A cut answer is not kept: it is not what the target answers.
 */
export function recordStage(recorder: Recorder | undefined): Stage {
  return {
    name: "record",
    open(call) {
      const route = routeOf(call);
      if (!recorder || !(route.record || route.shadow)) return undefined;
      const { ctx, screened } = call;
      const recording = recorder.plan(
        route,
        {
          requestId: ctx.requestId,
          keptLocal: screened.policy.keptLocal || (screened.found !== undefined && !screened.vault),
          maxAnswerBytes: call.config.limits.maxAnswerBytes,
          ...(ctx.background ? { background: true } : {}),
          ...(ctx.principal ? { keyName: ctx.principal.name } : {}),
          ...(ctx.tags ? { tags: ctx.tags } : {}),
        },
        call.request,
      );
      if (!recording) return undefined;
      return {
        tap: (delta) => recording.capture.observe(delta),
        end: ({ failure, cut }) => {
          if (!failure && !cut && call.servedBy) recorder.offer(recording, call.servedBy);
        },
      };
    },
  };
}
