import { log, type Services, startGateway } from "../services.js";
import { type UploadResult, uploadScenario } from "../upload.js";

/** A 100 MiB batch-file upload (issue #47): the gateway's event-loop delay and RSS growth while it streams in, on a gateway of its own. */
export function uploadRun(s: Services): Promise<UploadResult> {
  return uploadScenario(s.size.upload, { startGateway: (config) => startGateway(s, config), log });
}
