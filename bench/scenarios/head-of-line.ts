import { runtimeAt } from "../capacity.js";
import { type HeadOfLineResult, headOfLineScenario } from "../head-of-line.js";
import { startJson } from "../procs.js";
import { LOAD, load, log, type Services, startGateway } from "../services.js";
import { DB_READY_TIMEOUT_MS } from "./cache.js";

/** Head of line (issue #47): small streams beside a long prompt, a batch upload and semantic misses, on a gateway of its own with the embedded PGlite. */
export function headOfLineRun(s: Services): Promise<HeadOfLineResult> {
  return headOfLineScenario(s.size.headOfLine, {
    startGateway: (config, models) => startGateway(s, config, { models, readyEvent: "db.ready", timeoutMs: DB_READY_TIMEOUT_MS }),
    runtime: runtimeAt,
    load,
    startLoad: (spec) => startJson([LOAD, JSON.stringify(spec)], 600_000),
    log,
  });
}
