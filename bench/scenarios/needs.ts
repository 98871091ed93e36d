import { type NeedsResult, needsScenario } from "../needs.js";
import { load, log, type Services, simReset, startGateway } from "../services.js";

/** Routing by need (issue #29): TTFT through an alias with capabilities vs one without, on a gateway of its own; token counting in this process. */
export function needsRun(s: Services): Promise<NeedsResult> {
  return needsScenario(s.size.needs, {
    startGateway: (models) => startGateway(s, {}, { models }),
    load,
    simReset: () => simReset(s),
    log,
  });
}
