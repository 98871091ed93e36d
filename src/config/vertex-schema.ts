import { z } from "zod";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Settings only a `kind: vertex` provider reads. */
export const vertexSchema = z
  .strictObject({
    project: z
      .string()
      .regex(/^[a-z][a-z0-9-]{4,61}[a-z0-9]$/, "must be a Google Cloud project id")
      .meta({ description: "The Google Cloud project id whose Vertex AI quota and billing the requests use." }),
    location: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, "must be a Vertex AI location such as us-central1, europe-west4 or global")
      .meta({ description: "The Vertex AI location (`us-central1`, `us-east5`, `europe-west4`, …) or `global`; it decides the endpoint host." }),
    publisher: z.enum(["google", "anthropic"]).optional().meta({
      description: "Whose models this provider serves: `google` (Gemini, the Gemini wire) or `anthropic` (Claude, the Anthropic Messages wire through rawPredict).",
      unset: "by model id: `claude-*` is `anthropic`, anything else `google`",
    }),
    keyFile: z.string().min(1).max(4096).optional().meta({ description: "Path of a service-account key file (JSON).", unset: "`keyFileEnv`, else Application Default Credentials" }),
    keyFileEnv: z
      .string()
      .regex(ENV_NAME, "must be an environment variable name")
      .optional()
      .meta({ description: "Environment variable holding the path of a service-account key file; the NAME of the variable. Unset variable = start-up failure.", unset: "`keyFile`, else Application Default Credentials" }),
  })
  .refine((v) => v.keyFile === undefined || v.keyFileEnv === undefined, { message: "set keyFile or keyFileEnv, not both" })
  .meta({ description: "Settings of a `vertex` provider (see [Providers](providers.md#google-vertex-ai))." });

export type VertexSettings = z.output<typeof vertexSchema>;

/**
 * The base URL a `vertex` provider's settings imply when `baseUrl` is unset:
 * the regional endpoint `https://{location}-aiplatform.googleapis.com`, or
 * `https://aiplatform.googleapis.com` for `global`, with the project and
 * location path every Vertex method lives under.
 */
export function vertexBaseUrl(settings: VertexSettings | undefined): string | undefined {
  if (!settings) return undefined;
  const host = settings.location === "global" ? "aiplatform.googleapis.com" : `${settings.location}-aiplatform.googleapis.com`;
  return `https://${host}/v1/projects/${settings.project}/locations/${settings.location}`;
}

/** The settings with `keyFileEnv` read: the key file's path as `keyFile` (the environment checks have refused an unset variable). */
export function withKeyFileFromEnv(settings: VertexSettings, env: NodeJS.ProcessEnv): VertexSettings {
  if (settings.keyFileEnv === undefined) return settings;
  const { keyFileEnv, ...rest } = settings;
  return { ...rest, keyFile: env[keyFileEnv]! };
}
