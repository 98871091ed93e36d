import { notBuiltAdapter } from "../not-built.js";
import type { ProviderAdapter } from "../provider.js";

export const bedrockAdapter: ProviderAdapter = notBuiltAdapter("bedrock");
