import type { Stage } from "../stage.js";

/** The alias's route in the configuration current when the call started; `unknown_model` when it has none. After the allowlist. */
export function routeStage(): Stage {
  return {
    name: "route",
    open(call) {
      call.route = call.routes.lookup(call.request.model);
      return undefined;
    },
  };
}
