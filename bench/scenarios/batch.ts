import { type BatchResult, batchScenario } from "../batch.js";
import { load, log, type Services, simReset, startGateway } from "../services.js";

/** Batches beside interactive traffic (issue #30): interactive TTFT with and without a batch running, on a gateway of its own. */
export function batchRun(s: Services): Promise<BatchResult> {
  return batchScenario(s.size.batch, {
    startGateway: (config, provider) => startGateway(s, config, { provider }),
    load,
    simReset: () => simReset(s),
    log,
  });
}
