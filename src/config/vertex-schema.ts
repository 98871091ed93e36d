import { z } from "zod";

/** Settings only a `kind: vertex` provider reads. */
export const vertexSchema = z.strictObject({}).meta({ description: "Settings of a `vertex` provider (see [Providers](providers.md))." });

export type VertexSettings = z.output<typeof vertexSchema>;

/** The base URL a `vertex` provider's settings imply when `baseUrl` is unset; undefined: none (baseUrl is then required). */
export function vertexBaseUrl(_settings: VertexSettings | undefined): string | undefined {
  return undefined;
}
