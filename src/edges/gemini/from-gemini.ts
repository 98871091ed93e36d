import type { z } from "zod";
import type { ChatRequest, ReasoningEffort, ResponseFormat, ToolChoice, ToolDefinition } from "../../core/chat-request.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { geminiParam, renameLeadingFields } from "./gemini-params.js";
import { countTokensBody, type GenerateContentBody, generateContentBody, HOSTED_TOOLS } from "./gemini-schema.js";
import { canonicalMessages } from "./gemini-turns.js";
import { jsonSchemaFromOpenApi } from "./openapi-schema.js";

/** A decoded generateContent body: the canonical request, what was dropped (Gemini's names), and whether thought text is shown. */
export interface GeminiRequest {
  readonly request: ChatRequest;
  readonly dropped: readonly string[];
  readonly includeThoughts: boolean;
}

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

function fieldOf(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  return out;
}

/** The first problem zod found, as a 400 naming the field (cut before it is echoed: names are the client's). */
export function parseBody<T extends z.ZodType>(schema: T, json: unknown): z.infer<T> {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const at = fieldOf(issue.path);
  if (issue.code === "unrecognized_keys") {
    const field = clipClientValue(at === "" ? (issue.keys[0] ?? "") : `${at}.${issue.keys[0] ?? ""}`);
    return invalid(field, "unknown name: not a field of this request (or not served by this gateway)");
  }
  const field = clipClientValue(at);
  throw new GatewayError("invalid_request", `${field || "request body"}: ${clipClientValue(issue.message)}`, { field: field || "body" });
}

const THINKING_LEVEL: Record<string, ReasoningEffort | undefined> = { minimal: "minimal", low: "low", medium: "medium", high: "high" };

function functionTools(body: GenerateContentBody, dropped: string[]): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  (body.tools ?? []).forEach((t, i) => {
    for (const hosted of HOSTED_TOOLS) if ((t as Record<string, unknown>)[hosted] !== undefined) dropped.push(`tools[${i}].${hosted}`);
    (t.functionDeclarations ?? []).forEach((f, j) => {
      const at = `tools[${i}].functionDeclarations[${j}]`;
      if (f.response !== undefined || f.responseJsonSchema !== undefined) dropped.push(`${at}.response`);
      if (f.behavior !== undefined) dropped.push(`${at}.behavior`);
      const schema = f.parametersJsonSchema ?? (f.parameters ? jsonSchemaFromOpenApi(f.parameters) : { type: "object", properties: {} });
      if (schema === null || typeof schema !== "object" || Array.isArray(schema)) invalid(`${at}.parametersJsonSchema`, "must be a JSON Schema object");
      out.push({ name: f.name, description: f.description ?? "", parameters: schema as Record<string, unknown> });
    });
  });
  return out;
}

/** functionCallingConfig in canonical terms; ANY with several names offers only those tools and requires one. */
function toolChoice(body: GenerateContentBody, tools: ToolDefinition[], dropped: string[]): { readonly choice?: ToolChoice; readonly tools: ToolDefinition[] } {
  const config = body.toolConfig?.functionCallingConfig;
  if (body.toolConfig?.retrievalConfig !== undefined) dropped.push("toolConfig.retrievalConfig");
  if (!config?.mode || config.mode === "MODE_UNSPECIFIED") return { tools };
  if (config.mode === "NONE") return { choice: { type: "none" }, tools };
  if (config.mode === "AUTO" || config.mode === "VALIDATED") {
    if (config.mode === "VALIDATED") dropped.push("toolConfig.functionCallingConfig.mode");
    return { choice: { type: "auto" }, tools };
  }
  const names = config.allowedFunctionNames ?? [];
  if (names.length === 0) return { choice: { type: "required" }, tools };
  for (const name of names) if (!tools.some((t) => t.name === name)) invalid("toolConfig.functionCallingConfig.allowedFunctionNames", `no function declaration named ${JSON.stringify(clipClientValue(name, 64))}`);
  if (names.length === 1) return { choice: { type: "function", name: names[0]! }, tools };
  return { choice: { type: "required" }, tools: tools.filter((t) => names.includes(t.name)) };
}

function responseFormat(config: NonNullable<GenerateContentBody["generationConfig"]>): ResponseFormat | undefined {
  const mime = config.responseMimeType;
  const schema = config.responseJsonSchema ?? config._responseJsonSchema ?? (config.responseSchema ? jsonSchemaFromOpenApi(config.responseSchema) : undefined);
  if (mime === undefined || mime === "text/plain") {
    if (schema !== undefined) invalid("generationConfig.responseSchema", "needs responseMimeType application/json");
    return mime === undefined ? undefined : { type: "text" };
  }
  if (mime !== "application/json") invalid("generationConfig.responseMimeType", "only text/plain and application/json are served by this gateway");
  if (schema === undefined) return { type: "json_object" };
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) invalid("generationConfig.responseJsonSchema", "must be a JSON Schema object");
  return { type: "json_schema", name: "response", schema: schema as Record<string, unknown> };
}

/** The canonical request from a body; `settings` off for countTokens, which counts the prompt only. */
function decode(b: GenerateContentBody, model: string, maxJsonDepth: number): GeminiRequest {
  const dropped: string[] = [];
  const g = b.generationConfig ?? {};
  if (b.cachedContent !== undefined) invalid("cachedContent", "cached contents are stored at Google; this gateway holds none: send the contents instead");
  if (g.candidateCount !== undefined && g.candidateCount > 1) invalid("generationConfig.candidateCount", "only one candidate is served by this gateway");
  if (g.responseLogprobs === true) invalid("generationConfig.responseLogprobs", "log probabilities are not served on this edge");
  if (g.responseModalities?.some((m) => m.toUpperCase() !== "TEXT")) invalid("generationConfig.responseModalities", "only TEXT is served by this gateway");
  if (g.speechConfig !== undefined) invalid("generationConfig.speechConfig", "audio answers are not served by this gateway");
  if (b.safetySettings !== undefined) dropped.push("safetySettings");
  if (b.serviceTier !== undefined) dropped.push("serviceTier");
  if (b.store !== undefined) dropped.push("store");
  for (const hint of ["mediaResolution", "imageConfig", "audioTimestamp", "enableEnhancedCivicAnswers", "enableAffectiveDialog", "routingConfig", "modelSelectionConfig"] as const) {
    if (g[hint] !== undefined) dropped.push(`generationConfig.${hint}`);
  }
  if (g.topK !== undefined && !Number.isInteger(g.topK)) invalid("generationConfig.topK", "must be a whole number");
  const thinking = g.thinkingConfig;
  if (thinking?.thinkingBudget !== undefined && thinking.thinkingLevel !== undefined && thinking.thinkingLevel !== "THINKING_LEVEL_UNSPECIFIED") {
    invalid("generationConfig.thinkingConfig", "thinkingBudget and thinkingLevel cannot both be set");
  }
  const level = thinking?.thinkingLevel === undefined ? undefined : THINKING_LEVEL[thinking.thinkingLevel.toLowerCase()];
  const budget = thinking?.thinkingBudget;
  const includeThoughts = thinking?.includeThoughts === true;
  const reasoning = thinking
    ? {
        ...(budget === 0 ? { effort: "none" as const } : budget !== undefined && budget > 0 ? { budgetTokens: budget } : {}),
        ...(level ? { effort: level } : {}),
        ...(thinking.includeThoughts === undefined ? {} : { includeReasoning: thinking.includeThoughts }),
      }
    : undefined;
  const declared = functionTools(b, dropped);
  const { choice, tools } = toolChoice(b, declared, dropped);
  const format = responseFormat(g);
  const draft: ChatRequest = {
    model,
    messages: canonicalMessages(b.systemInstruction, b.contents, dropped),
    tools,
    ...(choice ? { toolChoice: choice } : {}),
    sampling: {
      stop: g.stopSequences ?? [],
      ...(g.temperature === undefined ? {} : { temperature: g.temperature }),
      ...(g.topP === undefined ? {} : { topP: g.topP }),
      ...(g.topK === undefined ? {} : { topK: g.topK }),
      ...(g.maxOutputTokens === undefined ? {} : { maxTokens: g.maxOutputTokens }),
      ...(g.seed === undefined ? {} : { seed: g.seed }),
      ...(g.presencePenalty === undefined ? {} : { presencePenalty: g.presencePenalty }),
      ...(g.frequencyPenalty === undefined ? {} : { frequencyPenalty: g.frequencyPenalty }),
    },
    metadata: { labels: b.labels ?? {} },
    ...(format ? { responseFormat: format } : {}),
    ...(reasoning && Object.keys(reasoning).length > 0 ? { reasoning } : {}),
  };
  try {
    return { request: validateChatRequest(draft, maxJsonDepth), dropped, includeThoughts };
  } catch (error) {
    if (!(error instanceof GatewayError) || error.field === undefined) throw error;
    throw new GatewayError(error.code, renameLeadingFields(error.message, error.field, geminiParam), { field: geminiParam(error.field) });
  }
}

/**
 * A generateContent body (parsed JSON) for the model named in the path, as
 * a validated canonical request. Hints (safetySettings, hosted tools the
 * gateway cannot run, media resolution…) are dropped and named; what would
 * change the answer if ignored (several candidates, a cached content,
 * audio or image output, log probabilities) is refused by name.
 */
export function geminiRequestFrom(json: unknown, model: string, limits: Pick<StructureLimits, "maxJsonDepth">): GeminiRequest {
  return decode(parseBody(generateContentBody, json), model, limits.maxJsonDepth);
}

/** A countTokens body (`contents`, or a whole `generateContentRequest`) as the request whose prompt is counted. */
export function countTokensRequestFrom(json: unknown, model: string, limits: Pick<StructureLimits, "maxJsonDepth">): ChatRequest {
  const b = parseBody(countTokensBody, json);
  const whole = b.generateContentRequest ?? (b.contents ? { contents: b.contents } : undefined);
  if (!whole || whole.contents.length === 0) invalid("contents", "must contain at least one content");
  return decode(whole, model, limits.maxJsonDepth).request;
}
