import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServiceAccountKey, ServiceAccountOptions } from "../../src/simulator/google-oauth.js";
import type { Simulator } from "../../src/simulator/server.js";
import type { SimulatedProvider } from "./simulated-providers.js";

/** The variable the simulated Vertex provider reads its key file's path from. */
export const SIM_VERTEX_KEY_ENV = "SIM_VERTEX_KEY_FILE";

/** A new service account of `sim`, its key written to a fresh temporary file (the key pair is made now, never stored in the repository). */
export function writeServiceAccount(sim: Simulator, options?: ServiceAccountOptions): { key: ServiceAccountKey; path: string } {
  const key = sim.googleServiceAccount(options);
  const path = join(mkdtempSync(join(tmpdir(), "sluice-vertex-")), "key.json");
  writeFileSync(path, JSON.stringify(key), { mode: 0o600 });
  return { key, path };
}

/** One service account per simulator: every provider entry a suite builds over it shares the key file. */
const keyFiles = new WeakMap<Simulator, string>();

/** Vertex AI on the simulator: project `sim-project` in `us-central1`, Gemini models, a service-account key file named by an environment variable. */
export function simulatedVertex(sim: Simulator): SimulatedProvider {
  let path = keyFiles.get(sim);
  if (path === undefined) {
    path = writeServiceAccount(sim).path;
    keyFiles.set(sim, path);
  }
  return {
    provider: { kind: "vertex", baseUrl: sim.vertexBaseUrl, vertex: { project: "sim-project", location: "us-central1", keyFileEnv: SIM_VERTEX_KEY_ENV } },
    env: { [SIM_VERTEX_KEY_ENV]: path },
  };
}
