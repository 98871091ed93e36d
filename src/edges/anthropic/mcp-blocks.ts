import type { ChatResult } from "../../core/aggregate.js";
import { aggregateDeltas } from "../../core/aggregate.js";
import type { Delta, GatewayToolEvent } from "../../core/delta.js";
import type { ContentBlock } from "./anthropic-message.js";

/** A call's JSON arguments as the `input` object of its block (`{}` when the model wrote none, or not an object). */
function parsedInput(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * A tool the gateway ran (call/gateway-tool-loop.ts) as Anthropic's MCP
 * connector shows one: the call an `mcp_tool_use` block, its result an
 * `mcp_tool_result`. The listing has no block in this API (undefined).
 */
export function mcpBlock(event: GatewayToolEvent): ContentBlock | undefined {
  switch (event.kind) {
    case "list":
      return undefined;
    case "call":
      return { type: "mcp_tool_use", id: event.id, name: event.tool, server_name: event.server, input: parsedInput(event.arguments) };
    case "result":
      return { type: "mcp_tool_result", tool_use_id: event.id, is_error: event.isError || event.failure !== undefined, content: [{ type: "text", text: event.output }] };
  }
}

/** A whole answer's result and, beside it, the MCP blocks of the tools the gateway ran for it, in order. */
export async function resultWithMcpBlocks(deltas: AsyncIterable<Delta>): Promise<{ readonly result: ChatResult; readonly blocks: readonly ContentBlock[] }> {
  const blocks: ContentBlock[] = [];
  async function* tapped(): AsyncGenerator<Delta, void, undefined> {
    for await (const delta of deltas) {
      if (delta.type === "gateway_tool") {
        const block = mcpBlock(delta.event);
        if (block) blocks.push(block);
      } else yield delta;
    }
  }
  return { result: await aggregateDeltas(tapped()), blocks };
}
