import { z } from "zod";

/** Settings only a `kind: bedrock` provider reads. */
export const bedrockSchema = z.strictObject({}).meta({ description: "Settings of a `bedrock` provider (see [Providers](providers.md))." });

export type BedrockSettings = z.output<typeof bedrockSchema>;

/** The base URL a `bedrock` provider's settings imply when `baseUrl` is unset; undefined: none (baseUrl is then required). */
export function bedrockBaseUrl(_settings: BedrockSettings | undefined): string | undefined {
  return undefined;
}
