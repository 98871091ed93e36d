import { z } from "zod";
import { createSecret, type Secret } from "./secret.js";

/** The newest generally available dated version of Azure OpenAI's data-plane inference API (Chat Completions, embeddings). */
export const AZURE_CHAT_API_VERSION = "2024-10-21";
/** Azure serves the Responses API under a preview version only (no dated GA version has it). */
export const AZURE_RESPONSES_API_VERSION = "2025-04-01-preview";
/** The scope a Microsoft Entra ID token for Azure OpenAI's data plane is asked for. */
export const AZURE_COGNITIVE_SCOPE = "https://cognitiveservices.azure.com/.default";

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

const entraSchema = z
  .strictObject({
    tenantId: z.string().min(1).max(100).optional().meta({ description: "The directory (tenant) id of the service principal.", unset: "DefaultAzureCredential's own (`AZURE_TENANT_ID`, workload identity, managed identity, Azure CLI)" }),
    clientId: z.string().min(1).max(100).optional().meta({ description: "The application (client) id of the service principal.", unset: "DefaultAzureCredential's own" }),
    clientSecretEnv: envName.optional().meta({ description: "Environment variable with the service principal's client secret; with `tenantId` and `clientId` the token comes from ClientSecretCredential.", unset: "DefaultAzureCredential" }),
    authorityHost: z
      .url({ protocol: /^https$/ })
      .optional()
      .meta({ description: "The Entra ID authority (a sovereign cloud's, e.g. `https://login.microsoftonline.us`).", unset: "`https://login.microsoftonline.com`" }),
  })
  .superRefine((e, ctx) => {
    if (e.clientSecretEnv !== undefined && (e.tenantId === undefined || e.clientId === undefined)) {
      ctx.addIssue({ code: "custom", path: ["clientSecretEnv"], message: "needs tenantId and clientId" });
    }
  });

/** Settings only a `kind: azure-openai` provider reads. */
export const azureSchema = z
  .strictObject({
    resource: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/, "must be an Azure resource name")
      .optional()
      .meta({ description: "The Azure OpenAI resource: the base URL is then `https://{resource}.openai.azure.com/openai`.", unset: "`baseUrl` must be set (ending in `/openai`)" }),
    api: z
      .enum(["chat", "responses"])
      .default("chat")
      .meta({ description: "The wire: `chat` (Chat Completions on `/deployments/{deployment}/chat/completions`) or `responses` (the Responses API on `/responses`, the deployment as `model`)." }),
    apiVersion: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, "must be a dated API version such as 2024-10-21")
      .optional()
      .meta({ description: "The `api-version` sent on every request.", unset: `\`${AZURE_CHAT_API_VERSION}\` (chat, embeddings), \`${AZURE_RESPONSES_API_VERSION}\` (responses)` }),
    entra: entraSchema.optional().meta({ description: "Authenticate with a Microsoft Entra ID token (`Authorization: Bearer`, refreshed before it expires) instead of the `api-key` header.", unset: "the `api-key` header from `apiKeyEnv`" }),
    tokenEnv: envName.optional().meta({ description: "Environment variable with a ready Entra ID bearer token, read once at start (for a token minted outside; it is not refreshed).", unset: "none" }),
  })
  .superRefine((s, ctx) => {
    if (s.entra !== undefined && s.tokenEnv !== undefined) ctx.addIssue({ code: "custom", path: ["tokenEnv"], message: "set entra or tokenEnv, not both" });
  })
  .meta({ description: "Settings of an `azure-openai` provider (see [Azure OpenAI](providers.md#azure-openai))." });

export type AzureSettings = z.output<typeof azureSchema>;

/** An Azure provider's settings with the secrets they name read from the environment. */
export interface AzureConfig extends AzureSettings {
  readonly clientSecret?: Secret;
  readonly staticToken?: Secret;
}

/** The base URL a `azure-openai` provider's settings imply when `baseUrl` is unset; undefined: none (baseUrl is then required). */
export function azureBaseUrl(settings: AzureSettings | undefined): string | undefined {
  return settings?.resource === undefined ? undefined : `https://${settings.resource.toLowerCase()}.openai.azure.com/openai`;
}

/** The environment variables an Azure provider's settings name (checked at start like `apiKeyEnv`). */
export function azureEnvNames(settings: unknown): Array<{ readonly name: unknown; readonly path: PropertyKey[] }> {
  if (settings === null || typeof settings !== "object") return [];
  const s = settings as { tokenEnv?: unknown; entra?: { clientSecretEnv?: unknown } | null };
  return [
    { name: s.tokenEnv, path: ["azure", "tokenEnv"] },
    { name: s.entra?.clientSecretEnv, path: ["azure", "entra", "clientSecretEnv"] },
  ];
}

/** The settings with their secrets; the environment checks have made sure every named variable is set. */
export function resolveAzure(settings: AzureSettings, env: NodeJS.ProcessEnv): AzureConfig {
  const secret = settings.entra?.clientSecretEnv;
  return {
    ...settings,
    ...(secret === undefined ? {} : { clientSecret: createSecret(env[secret] ?? "") }),
    ...(settings.tokenEnv === undefined ? {} : { staticToken: createSecret(env[settings.tokenEnv] ?? "") }),
  };
}
