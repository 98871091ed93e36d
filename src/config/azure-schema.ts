import { z } from "zod";

/** Settings only a `kind: azure` provider reads. */
export const azureSchema = z.strictObject({}).meta({ description: "Settings of a `azure` provider (see [Providers](providers.md))." });

export type AzureSettings = z.output<typeof azureSchema>;

/** The base URL a `azure` provider's settings imply when `baseUrl` is unset; undefined: none (baseUrl is then required). */
export function azureBaseUrl(_settings: AzureSettings | undefined): string | undefined {
  return undefined;
}
