import { type PiiResult, piiScenario } from "../pii.js";
import { load, log, type Services, simRecords, simReset, startGateway } from "../services.js";

/** PII redaction (issue #28): screening in this process, and restoring's gateway CPU per delta on a gateway of its own. */
export function piiRun(s: Services): Promise<PiiResult> {
  return piiScenario(s.size.pii, {
    startGateway: (models) => startGateway(s, {}, { models }),
    load,
    simReset: () => simReset(s),
    upstreamDeltas: async () => (await simRecords(s)).reduce((n, r) => n + r.tokensWritten, 0),
    log,
  });
}
