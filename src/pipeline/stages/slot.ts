import type { Stage } from "../stage.js";
import type { StreamRegistry } from "../stream-registry.js";

/**
 * A slot in the replica's stream registry: refused while draining, and the
 * handle by which shutdown ends the call. Before any stage that waits on
 * I/O, so a drain waits for every call that got that far.
 */
export function slotStage(registry: StreamRegistry): Stage {
  return {
    name: "slot",
    open(call) {
      const release = registry.admit(call.stop);
      return { end: release };
    },
  };
}
