import { notBuiltAdapter } from "../not-built.js";
import type { ProviderAdapter } from "../provider.js";

export const vertexAdapter: ProviderAdapter = notBuiltAdapter("vertex");
