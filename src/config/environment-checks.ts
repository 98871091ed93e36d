import { azureEnvNames } from "./azure-schema.js";
import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";
import { PROVIDER_PRESETS } from "./provider-presets.js";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Shortest virtual or admin key accepted from the environment: anything shorter can be guessed. */
export const MIN_KEY_CHARS = 16;

/** A key variable that is unset (or, for virtual and admin keys, too short to be a secret). */
function variableProblem(variable: unknown, env: NodeJS.ProcessEnv, path: PropertyKey[], minChars = 1): ConfigProblem[] {
  if (typeof variable !== "string" || !ENV_NAME.test(variable)) return [];
  const value = env[variable];
  if (value === undefined || value === "") return [{ path, message: `environment variable ${variable} is not set` }];
  // The message names the variable and the rule, never the value.
  if (value.length < minChars) return [{ path, message: `environment variable ${variable} holds a key shorter than ${minChars} characters` }];
  return [];
}

/** A provider's key variables: `apiKeyEnv` (written, or its preset's) and Azure's token and client secret. */
function providerProblems(name: string, provider: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(provider)) return [];
  const preset = typeof provider.preset === "string" && Object.hasOwn(PROVIDER_PRESETS, provider.preset) ? (PROVIDER_PRESETS[provider.preset as keyof typeof PROVIDER_PRESETS] as { apiKeyEnv?: string }) : undefined;
  const keyProblems = variableProblem(provider.apiKeyEnv ?? preset?.apiKeyEnv, env, ["providers", name, "apiKeyEnv"]);
  return [...keyProblems, ...azureEnvNames(provider.azure).flatMap(({ name: variable, path }) => variableProblem(variable, env, ["providers", name, ...path]))];
}

/** The variables a `bedrock` provider's static credentials name. */
function bedrockVariableProblems(provider: unknown, env: NodeJS.ProcessEnv, path: PropertyKey[]): ConfigProblem[] {
  const credentials = isRecord(provider) && isRecord(provider.bedrock) && isRecord(provider.bedrock.credentials) ? provider.bedrock.credentials : {};
  return ["accessKeyIdEnv", "secretAccessKeyEnv", "sessionTokenEnv"].flatMap((field) => variableProblem(credentials[field], env, [...path, field]));
}

/** Every key variable that is unset, not only the first: providers', virtual keys' and the admin key's. */
export function environmentProblems(input: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const providers = isRecord(input.providers) ? Object.entries(input.providers).flatMap(([name, provider]) => providerProblems(name, provider, env)) : [];
  const vertexKeyFiles = isRecord(input.providers)
    ? Object.entries(input.providers).flatMap(([name, provider]) => variableProblem(isRecord(provider) && isRecord(provider.vertex) ? provider.vertex.keyFileEnv : undefined, env, ["providers", name, "vertex", "keyFileEnv"]))
    : [];
  const bedrock = isRecord(input.providers) ? Object.entries(input.providers).flatMap(([name, provider]) => bedrockVariableProblems(provider, env, ["providers", name, "bedrock", "credentials"])) : [];
  const auth = isRecord(input.auth) ? input.auth : {};
  const keys = Array.isArray(auth.keys) ? auth.keys.flatMap((key: unknown, i) => variableProblem(isRecord(key) ? key.keyEnv : undefined, env, ["auth", "keys", i, "keyEnv"], MIN_KEY_CHARS)) : [];
  const webhook = isRecord(input.alerts) && isRecord(input.alerts.webhook) ? input.alerts.webhook : {};
  // The per-key MCP tokens' sealing secret: 32 characters, the AES-256 key's length.
  const mcp = isRecord(input.mcp) ? variableProblem(input.mcp.credentialsKeyEnv, env, ["mcp", "credentialsKeyEnv"], 32) : [];
  return [
    ...providers,
    ...bedrock,
    ...vertexKeyFiles,
    ...keys,
    ...variableProblem(auth.adminKeyEnv, env, ["auth", "adminKeyEnv"], MIN_KEY_CHARS),
    ...variableProblem(webhook.secretEnv, env, ["alerts", "webhook", "secretEnv"], MIN_KEY_CHARS),
    ...mcp,
  ];
}
