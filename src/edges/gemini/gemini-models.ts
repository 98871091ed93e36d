import type { CallLayer } from "../../call/call-layer.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, sendJson } from "../../http/node-http.js";
import { sendGoogleError } from "./gemini-errors.js";
import { credentialOf } from "./gemini-key.js";

/**
 * A model as Google lists it: `models/{alias}`, with the methods every
 * alias serves here, and the limits every target of the alias keeps
 * (what a client may rely on whichever target answers).
 */
function modelResource(model: Awaited<ReturnType<CallLayer["models"]>>[number]): Record<string, unknown> {
  const every = model.capabilities?.everyTarget;
  return {
    name: `models/${model.id}`,
    baseModelId: model.id,
    version: "sluice",
    displayName: model.id,
    ...(every?.contextWindow === undefined ? {} : { inputTokenLimit: every.contextWindow }),
    ...(every?.maxOutputTokens === undefined ? {} : { outputTokenLimit: every.maxOutputTokens }),
    ...(every?.reasoning === undefined ? {} : { thinking: every.reasoning }),
    supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"],
  };
}

/** `GET /v1beta/models[/{model}]`: the aliases the caller's key may use, in Google's Model resources. */
export async function geminiModels(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer, id?: string): Promise<void> {
  try {
    const visible = await calls.models(credentialOf(req), exchange.edge, exchange.fields, exchange.remote);
    if (id === undefined) {
      exchange.code = "ok";
      return sendJson(res, 200, { models: visible.map(modelResource) });
    }
    const name = id.startsWith("models/") ? id.slice("models/".length) : id;
    const model = visible.find((m) => m.id === name);
    if (!model) throw new GatewayError("unknown_model", `unknown model ${JSON.stringify(clipClientValue(name))}: not configured on this gateway`, { field: "model" });
    exchange.code = "ok";
    sendJson(res, 200, modelResource(model));
  } catch (error) {
    sendGoogleError(res, exchange, error);
  }
}
