import type { ProviderKind } from "../core/chat-request.js";
import { type AzureSettings, azureBaseUrl } from "./azure-schema.js";
import { type BedrockWritten, bedrockBaseUrl } from "./bedrock-schema.js";
import { type PresetName, presetOf } from "./provider-presets.js";
import { type VertexSettings, vertexBaseUrl } from "./vertex-schema.js";

/** The fields of a written provider that decide where it is reached. */
export interface WrittenEndpoint {
  readonly kind: ProviderKind;
  readonly baseUrl?: string | undefined;
  readonly azure?: AzureSettings | undefined;
  readonly bedrock?: BedrockWritten | undefined;
  readonly vertex?: VertexSettings | undefined;
  readonly preset?: PresetName | undefined;
}

/**
 * Where a provider is reached, without a trailing slash: its `baseUrl` when
 * written, else what its kind's settings imply (a Bedrock region, a Vertex
 * location, an Azure resource); undefined when neither says.
 */
export function providerBaseUrl(p: WrittenEndpoint): string | undefined {
  const url = p.baseUrl ?? (p.kind === "azure-openai" ? azureBaseUrl(p.azure) : p.kind === "bedrock" ? bedrockBaseUrl(p.bedrock) : p.kind === "vertex" ? vertexBaseUrl(p.vertex) : presetOf(p.preset)?.baseUrl);
  return url?.replace(/\/+$/, "");
}
