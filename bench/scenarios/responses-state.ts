import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Mode } from "../modes.js";
import { type ResponsesStateResult, type ResponsesStateSizes, responsesStateScenario } from "../responses-state.js";
import { log, type Services } from "../services.js";

const SIZES: Record<Mode, ResponsesStateSizes> = { full: { turns: 20, pairs: 200, writes: 300 }, quick: { turns: 20, pairs: 100, writes: 400 } };

/** Stored responses (issue #46): a continued 20-turn conversation against the same request whole, and the write's CPU, on gateways of its own. */
export async function responsesStateRun(s: Services): Promise<ResponsesStateResult[]> {
  return responsesStateScenario(s.simOpenAi, await mkdtemp(join(tmpdir(), "sluice-bench-responses-")), SIZES[s.mode], log);
}
