import { type ChatMessage, type ChatRequest, messageText } from "../../core/chat-request.js";
import type { Delta } from "../../core/delta.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { Logger } from "../../logging/logger.js";
import { routeByNeed } from "../../routing/route-by-need.js";
import { createSummaryCache, SUMMARY_MAX_TOKENS } from "../../routing/summarize-turns.js";
import { type CallState, routeOf, type Stage } from "../stage.js";
import type { StreamContext } from "../stream-context.js";

/** The response header that says how the conversation was fitted to the context window. */
export const CONTEXT_HEADER = "sluice-context";

/** What the summarizer is told: keep what later turns may rely on, in few words. */
const SUMMARY_INSTRUCTIONS =
  "Summarise the conversation below for the assistant that continues it. Keep facts, names, numbers, decisions, open questions and what each tool call returned; leave out pleasantries. Write plain prose, at most a few paragraphs.";

export interface ContextDeps {
  /** Another call through the same pipeline: the summary of old turns, as the same key. */
  readonly subcall: (request: ChatRequest, ctx: StreamContext) => AsyncIterable<Delta>;
  /** For a failed summary (the call goes on truncated). */
  readonly logger?: Logger;
}

/**
 * Routing by need (routing/route-by-need.ts): the targets whose context
 * window and capabilities fit the request, and, where an alias asks for it,
 * the conversation truncated or its old turns summarised to fit. Before the
 * charge: the reservation is made for what will be sent. Says what it did
 * in `sluice-context`, the access line and the usage record.
 */
export function contextStage(deps: ContextDeps): Stage {
  const summaries = createSummaryCache();
  return {
    name: "context",
    async open(call) {
      const route = routeOf(call);
      const { ctx } = call;
      const summarizer = route.context?.summarizer ?? "";
      const routed = await routeByNeed(call.request, route, {
        summarize: (turns) => summarizeTurns(turns, summarizer, call, deps.subcall),
        summaries,
        signal: call.signal,
        // A summary is the summarizer's, for one key (by id: a key created under a revoked key's name is another key): neither another key nor another summarizer reads it.
        scope: `${ctx.principal?.id ?? ""}\u0000${summarizer}`,
        onSummaryFailed: (error) => deps.logger?.warn({ event: "context.summary_failed", requestId: ctx.requestId, alias: route.alias, error: toGatewayError(error).message }),
      });
      call.route = routed.route;
      call.request = routed.request;
      if (routed.context !== undefined) {
        call.summary.headers[CONTEXT_HEADER] = routed.context;
        call.summary.facts.context = routed.context;
        call.summary.record.context = routed.context;
      }
      return undefined;
    },
  };
}

/**
 * The summary of old turns (context.strategy summarize): a request to the
 * summarizer alias as the same key, so its limits, budget and usage record
 * count it like any other call, under the caller's signal and deadline.
 */
async function summarizeTurns(turns: readonly ChatMessage[], alias: string, call: CallState, subcall: ContextDeps["subcall"]): Promise<string> {
  const { ctx } = call;
  const transcript = turns.map((m) => `${m.role}: ${[messageText(m), ...(m.toolCalls ?? []).map((c) => `[calls ${c.name} ${c.arguments}]`)].filter(Boolean).join(" ")}`).join("\n\n");
  const request: ChatRequest = {
    model: alias,
    messages: [
      { role: "system", content: [{ type: "text", text: SUMMARY_INSTRUCTIONS }] },
      { role: "user", content: [{ type: "text", text: transcript }] },
    ],
    tools: [],
    sampling: { stop: [], maxTokens: SUMMARY_MAX_TOKENS },
    metadata: { labels: {} },
  };
  let text = "";
  const context: StreamContext = {
    signal: call.signal,
    requestId: `${ctx.requestId}.summary`,
    edge: "context",
    ...(ctx.principal ? { principal: ctx.principal } : {}),
    ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }),
  };
  for await (const delta of subcall(request, context)) if (delta.type === "text") text += delta.text;
  if (text.trim() === "") throw new GatewayError("upstream_protocol", "the summarizer answered nothing");
  return text.trim();
}
