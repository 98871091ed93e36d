import type { ConfigInput } from "../../src/config/schema.js";
import type { ProviderKind } from "../../src/core/chat-request.js";
import { AZURE_SIM_KEY } from "../../src/simulator/azure-wire.js";
import { SIMULATED_AWS_CREDENTIALS } from "../../src/simulator/bedrock-auth.js";
import type { Simulator } from "../../src/simulator/server.js";
import { simulatedVertex } from "./simulated-vertex.js";

export type { ProviderKind };

/** A provider entry that reaches the simulator over one wire format, and the environment its credentials come from. */
export interface SimulatedProvider {
  readonly provider: ConfigInput["providers"][string];
  readonly env: Readonly<Record<string, string>>;
}

/** The simulator's base URL for one of the original wire formats. */
export function baseUrlFor(sim: Simulator, kind: ProviderKind): string {
  return kind === "openai" || kind === "openai-responses" ? sim.openAiBaseUrl : kind === "anthropic" ? sim.anthropicBaseUrl : sim.geminiBaseUrl;
}

/**
 * How a gateway reaches the simulator as a provider of `kind`: its URL, the
 * settings the kind needs and credentials the simulator accepts. One place,
 * so every suite that runs over a kind configures it alike.
 */
export function simulatedProvider(sim: Simulator, kind: ProviderKind): SimulatedProvider {
  switch (kind) {
    case "vertex":
      return simulatedVertex(sim);
    case "azure-openai":
      return { provider: { kind, baseUrl: sim.azureBaseUrl, apiKeyEnv: "SIM_AZURE_API_KEY" }, env: { SIM_AZURE_API_KEY: AZURE_SIM_KEY } };
    case "bedrock":
      return {
        provider: { kind, baseUrl: sim.bedrockBaseUrl, bedrock: { region: "us-east-1", credentials: { accessKeyIdEnv: "SIM_AWS_ACCESS_KEY_ID", secretAccessKeyEnv: "SIM_AWS_SECRET_ACCESS_KEY" } } },
        env: { SIM_AWS_ACCESS_KEY_ID: SIMULATED_AWS_CREDENTIALS.accessKeyId, SIM_AWS_SECRET_ACCESS_KEY: SIMULATED_AWS_CREDENTIALS.secretAccessKey },
      };
    default:
      return { provider: { kind, baseUrl: baseUrlFor(sim, kind) }, env: {} };
  }
}
