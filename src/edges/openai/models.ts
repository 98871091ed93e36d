import type { CallLayer } from "../../call/call-layer.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import { sendOpenAiError } from "./http-errors.js";

/** Capability names as the JSON facades write fields (`context_window`). */
function snakeCase(caps: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(caps).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));
}

/** `GET /v1/models[/{id}]`: the aliases the caller's key may use, in OpenAI's model objects. */
export async function listModels(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer, id?: string): Promise<void> {
  let models: Array<{ id: string; object: string; created: number; owned_by: string; capabilities?: unknown }>;
  try {
    const visible = await calls.models(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
    // `capabilities` is Sluice's own field (what some target and what every target can do); OpenAI's SDKs pass unknown fields through.
    models = visible.map((model) => ({
      id: model.id,
      object: "model",
      created: 0,
      owned_by: model.provider,
      ...(model.capabilities ? { capabilities: { any_target: snakeCase(model.capabilities.anyTarget), every_target: snakeCase(model.capabilities.everyTarget) } } : {}),
    }));
  } catch (error) {
    return sendOpenAiError(res, exchange, error);
  }
  if (id === undefined) {
    exchange.code = "ok";
    return sendJson(res, 200, { object: "list", data: models });
  }
  const model = models.find((m) => m.id === id);
  if (!model) return sendOpenAiError(res, exchange, new GatewayError("unknown_model", `unknown model ${JSON.stringify(clipClientValue(id))}: not configured on this gateway`, { field: "model" }));
  exchange.code = "ok";
  sendJson(res, 200, model);
}
