import type { ChatRequest } from "../../core/chat-request.js";
import { routeOf, type Stage } from "../stage.js";

/**
 * An alias's `systemPrompt`: the operator's instructions, sent first as a
 * system message before the caller's own. After `redact` and `compliance`:
 * the operator's text is not the caller's data, so it is neither screened
 * nor refused for what it holds. Before `context` and `charge`: its tokens
 * are fitted and reserved like the rest of the prompt. The cache key
 * includes it, so a changed prompt is never answered from the old one.
 */
export function systemPromptStage(): Stage {
  return {
    name: "system-prompt",
    open(call) {
      const text = routeOf(call).systemPrompt;
      if (text === undefined) return undefined;
      call.request = withSystemPrompt(call.request, text);
      if (call.cacheRequest) call.cacheRequest = withSystemPrompt(call.cacheRequest, text);
      return undefined;
    },
  };
}

/** `request` with `text` as a first system message. */
export function withSystemPrompt(request: ChatRequest, text: string): ChatRequest {
  return { ...request, messages: [{ role: "system", content: [{ type: "text", text }] }, ...request.messages] };
}
