import { GatewayError } from "../core/errors.js";
import type { ProviderAdapter } from "./provider.js";

/** A provider kind whose adapter is being built: every request to it fails, naming the kind. */
export function notBuiltAdapter(kind: string): ProviderAdapter {
  const refuse = (): never => {
    throw new GatewayError("invalid_request", `provider kind ${kind} is not available in this build`);
  };
  return { unsupportedParams: () => [], buildRequest: refuse, createTranslator: refuse, errorFromResponse: refuse };
}
