import { z } from "zod";

/**
 * The generateContent body as far as Sluice reads it. Objects are strict,
 * as Google's own API is (an unknown name is a 400 there too), but every
 * field Google documents is listed: hints the answer does not depend on
 * are accepted here and named in `sluice-dropped-params` by from-gemini.ts;
 * what would change the answer if ignored is refused there by name.
 */

const record = z.record(z.string(), z.unknown());

const functionCall = z.strictObject({ id: z.string().optional(), name: z.string().min(1), args: record.optional(), partialArgs: z.unknown().optional(), willContinue: z.boolean().optional() });

const functionResponse = z.strictObject({
  id: z.string().optional(),
  name: z.string().min(1),
  response: record.optional(),
  parts: z.array(z.unknown()).optional(),
  willContinue: z.boolean().optional(),
  scheduling: z.string().optional(),
});

export const part = z.strictObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: z.strictObject({ mimeType: z.string(), data: z.string(), displayName: z.string().optional() }).optional(),
  fileData: z.strictObject({ mimeType: z.string().optional(), fileUri: z.string(), displayName: z.string().optional() }).optional(),
  functionCall: functionCall.optional(),
  functionResponse: functionResponse.optional(),
  executableCode: z.unknown().optional(),
  codeExecutionResult: z.unknown().optional(),
  videoMetadata: z.unknown().optional(),
  mediaResolution: z.unknown().optional(),
  partMetadata: z.unknown().optional(),
});
export type PartBody = z.infer<typeof part>;

export const content = z.strictObject({ role: z.string().optional(), parts: z.array(part).optional() });
export type ContentBody = z.infer<typeof content>;

const functionDeclaration = z.strictObject({
  name: z.string(),
  description: z.string().optional(),
  parameters: record.optional(),
  parametersJsonSchema: z.unknown().optional(),
  response: z.unknown().optional(),
  responseJsonSchema: z.unknown().optional(),
  behavior: z.string().optional(),
});

/** A tool: function declarations, or one of Google's hosted tools (an offer Sluice cannot host: dropped and named). */
export const HOSTED_TOOLS = ["googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "retrieval", "computerUse", "fileSearch", "googleMaps", "enterpriseWebSearch", "mcpServers"] as const;
const tool = z.strictObject({
  functionDeclarations: z.array(functionDeclaration).optional(),
  ...Object.fromEntries(HOSTED_TOOLS.map((name) => [name, z.unknown().optional()])),
});

const functionCallingConfig = z.strictObject({
  mode: z.enum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"]).optional(),
  allowedFunctionNames: z.array(z.string()).optional(),
  streamFunctionCallArguments: z.boolean().optional(),
});

const thinkingConfig = z.strictObject({
  includeThoughts: z.boolean().optional(),
  thinkingBudget: z.number().int().min(-1).optional(),
  thinkingLevel: z.enum(["THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH", "minimal", "low", "medium", "high"]).optional(),
});

const generationConfig = z.strictObject({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: z.number().optional(),
  candidateCount: z.number().int().optional(),
  maxOutputTokens: z.number().int().optional(),
  stopSequences: z.array(z.string()).optional(),
  seed: z.number().int().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  responseMimeType: z.string().optional(),
  responseSchema: record.optional(),
  responseJsonSchema: z.unknown().optional(),
  _responseJsonSchema: z.unknown().optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.number().int().optional(),
  responseModalities: z.array(z.string()).optional(),
  thinkingConfig: thinkingConfig.optional(),
  mediaResolution: z.unknown().optional(),
  speechConfig: z.unknown().optional(),
  imageConfig: z.unknown().optional(),
  audioTimestamp: z.unknown().optional(),
  enableEnhancedCivicAnswers: z.unknown().optional(),
  enableAffectiveDialog: z.unknown().optional(),
  routingConfig: z.unknown().optional(),
  modelSelectionConfig: z.unknown().optional(),
});

export const generateContentBody = z.strictObject({
  model: z.string().optional(),
  contents: z.array(content).min(1, { error: "must contain at least one content" }),
  systemInstruction: content.optional(),
  tools: z.array(tool).optional(),
  toolConfig: z.strictObject({ functionCallingConfig: functionCallingConfig.optional(), retrievalConfig: z.unknown().optional() }).optional(),
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(z.unknown()).optional(),
  cachedContent: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  serviceTier: z.unknown().optional(),
  store: z.unknown().optional(),
});
export type GenerateContentBody = z.infer<typeof generateContentBody>;

/** countTokens: `contents` alone, or a whole `generateContentRequest`. */
export const countTokensBody = z.strictObject({
  contents: z.array(content).optional(),
  generateContentRequest: generateContentBody.optional(),
});

export const embedContentBody = z.strictObject({
  model: z.string().optional(),
  content,
  taskType: z.string().optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().optional(),
});
export type EmbedContentBody = z.infer<typeof embedContentBody>;

export const batchEmbedContentsBody = z.strictObject({ requests: z.array(embedContentBody).min(1, { error: "must contain at least one request" }) });
