import { NO_CHARGE } from "../../tenancy/tenant-charge.js";
import { routeOf, type Stage } from "../stage.js";

/**
 * The key's limits and budgets, checked and reserved in one store round
 * trip (tenancy/tenant-charge.ts). After the context stage: the reservation
 * is made for the request as it will be sent, and for the route it will
 * take.
 */
export function chargeStage(): Stage {
  return {
    name: "charge",
    open(call) {
      if (call.charge === NO_CHARGE) return undefined;
      return call.charge.admit(routeOf(call)).then(() => undefined);
    },
  };
}
