import type { Stage } from "../stage.js";

/**
 * A provider that reports no usage gets the gateway's count before
 * `finish` (usage/usage-meter.ts), so every edge and the charge see usage
 * once, at the end, and a real answer is never charged as zero.
 */
export function usageStage(): Stage {
  return {
    name: "usage",
    open(call) {
      const { meter } = call;
      return { beforeFinish: () => (meter.missingUsage ? meter.estimateIfMissing() : undefined) };
    },
  };
}
