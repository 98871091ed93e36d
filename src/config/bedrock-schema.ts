import { z } from "zod";
import { createSecret, type Secret } from "./secret.js";

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

/** Settings only a `kind: bedrock` provider reads. */
export const bedrockSchema = z
  .strictObject({
    region: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, "must be an AWS region such as us-east-1")
      .meta({ description: "The AWS region: where requests go (`https://bedrock-runtime.{region}.amazonaws.com` unless `baseUrl` says otherwise) and what they are signed for." }),
    api: z.enum(["converse", "invoke"]).default("converse").meta({
      description:
        "`converse`: the Converse API for every model (one request shape; Claude's thinking through its own fields). `invoke`: InvokeModelWithResponseStream with Anthropic's own Messages body, for Claude models only (prompt-cache breakpoints and every Messages field as the Anthropic kind sends them).",
    }),
    credentials: z
      .strictObject({
        accessKeyIdEnv: envName.meta({ description: "Environment variable with the access key id (its NAME)." }),
        secretAccessKeyEnv: envName.meta({ description: "Environment variable with the secret access key (its NAME)." }),
        sessionTokenEnv: envName.optional().meta({ description: "Environment variable with a session token, for temporary credentials.", unset: "none" }),
      })
      .optional()
      .meta({
        description: "Static credentials read from the environment at start. Unset variable = start-up failure.",
        unset: "the AWS SDK's default chain: AWS_* variables, shared config and credentials files (AWS_PROFILE), web identity (EKS, IRSA), SSO, ECS and EC2 instance roles; refreshed before they expire",
      }),
  })
  .meta({ description: "Settings of a `bedrock` provider (see [AWS Bedrock](providers.md#aws-bedrock))." });

/** The settings as the file writes them. */
export type BedrockWritten = z.output<typeof bedrockSchema>;

/** Static AWS credentials, read once from the environment. */
export interface BedrockStaticCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: Secret;
  readonly sessionToken?: Secret;
}

/** The settings a running `bedrock` provider uses: the region, and static credentials when the file names their variables. */
export interface BedrockSettings {
  readonly region: string;
  /** Which runtime API requests go to (see the schema's `api`). */
  readonly api: "converse" | "invoke";
  readonly credentials?: BedrockStaticCredentials;
}

/** The base URL a `bedrock` provider's settings imply when `baseUrl` is unset: the region's runtime endpoint. */
export function bedrockBaseUrl(settings: Pick<BedrockWritten, "region"> | undefined): string | undefined {
  return settings ? `https://bedrock-runtime.${settings.region}.amazonaws.com` : undefined;
}

/** The written settings with their credential variables read from `env` (checked to be set before, see environment-checks.ts). */
export function bedrockSettings(written: BedrockWritten, env: NodeJS.ProcessEnv): BedrockSettings {
  const c = written.credentials;
  if (!c) return { region: written.region, api: written.api };
  const token = c.sessionTokenEnv === undefined ? undefined : env[c.sessionTokenEnv];
  return {
    region: written.region,
    api: written.api,
    credentials: { accessKeyId: env[c.accessKeyIdEnv] ?? "", secretAccessKey: createSecret(env[c.secretAccessKeyEnv] ?? ""), ...(token ? { sessionToken: createSecret(token) } : {}) },
  };
}
