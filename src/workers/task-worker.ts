import { parentPort } from "node:worker_threads";
import type { TaskReply, TaskRequest } from "./task-messages.js";

/**
 * The one script every pool worker runs. It knows no task: a request
 * names the module and the export to call, and the module is imported
 * once per worker, so each room (usage/, compliance/) keeps its own task
 * beside the code it runs, and workers/ stays free of them.
 */
const modules = new Map<string, Promise<Record<string, unknown>>>();

async function run(request: TaskRequest): Promise<unknown> {
  let loaded = modules.get(request.module);
  if (!loaded) {
    loaded = import(request.module) as Promise<Record<string, unknown>>;
    modules.set(request.module, loaded);
  }
  const fn = (await loaded)[request.name];
  if (typeof fn !== "function") throw new Error(`${request.module} exports no function ${request.name}`);
  return fn(request.payload);
}

parentPort?.on("message", (request: TaskRequest) => {
  run(request).then(
    (value) => parentPort?.postMessage({ id: request.id, ok: true, value } satisfies TaskReply),
    (error: unknown) => parentPort?.postMessage({ id: request.id, ok: false, message: error instanceof Error ? error.message : String(error) } satisfies TaskReply),
  );
});
