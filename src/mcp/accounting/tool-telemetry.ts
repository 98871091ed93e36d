import { type Attributes, type Counter, context, type Histogram, type Meter, type Span, SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import type { ToolCallFacts, ToolCallOutcome } from "../contract.js";

/** How a tool call ended for metrics and its span: as settled, or refused at admission. */
export type ToolTelemetryOutcome = ToolCallOutcome | "refused";

/** The instruments of tool calls, made once per meter. */
export interface ToolInstruments {
  readonly calls: Counter;
  readonly duration: Histogram;
}

/** Tool calls by server, tool and outcome, and how long they took (sluice.* as the other gateway metrics, seconds as gen_ai.* durations). */
export function toolInstruments(meter: Meter): ToolInstruments {
  return {
    calls: meter.createCounter("sluice.mcp.tool.calls", { unit: "{call}", description: "MCP tool calls, by server, tool and outcome (ok, tool_error, failed, timeout, canceled, too_large, refused)." }),
    duration: meter.createHistogram("sluice.mcp.tool.duration", { unit: "s", description: "MCP tool call duration, from admission to settlement, by server, tool and outcome." }),
  };
}

/**
 * One tool call's span, after the OpenTelemetry GenAI conventions for
 * tool execution: `execute_tool {gen_ai.tool.name}`, INTERNAL, with
 * `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id` when
 * the call has one, and `error.type` when it did not end well. Never an
 * argument or a result: only their digest's presence and sizes.
 */
export function startToolSpan(tracer: Tracer, facts: ToolCallFacts): Span {
  return tracer.startSpan(
    `execute_tool ${facts.tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": facts.tool,
        "gen_ai.tool.type": "extension",
        ...(facts.callId === undefined ? {} : { "gen_ai.tool.call.id": facts.callId }),
        "mcp.method.name": "tools/call",
        "sluice.mcp.server": facts.server,
        "sluice.mcp.via": facts.via,
      },
    },
    context.active(),
  );
}

/** Ends a tool call's span and counts the call. */
export function endToolCall(
  span: Span | undefined,
  instruments: ToolInstruments | undefined,
  facts: ToolCallFacts,
  end: { readonly outcome: ToolTelemetryOutcome; readonly durationMs: number; readonly resultBytes?: number; readonly status?: number },
): void {
  const attributes: Attributes = { "sluice.mcp.server": facts.server, "gen_ai.tool.name": facts.tool, "sluice.mcp.outcome": end.outcome };
  instruments?.calls.add(1, attributes);
  instruments?.duration.record(end.durationMs / 1_000, attributes);
  if (!span) return;
  span.setAttribute("sluice.mcp.outcome", end.outcome);
  if (end.resultBytes !== undefined) span.setAttribute("sluice.mcp.result_bytes", end.resultBytes);
  if (end.status !== undefined) span.setAttribute("sluice.mcp.refusal_status", end.status);
  // A tool's own error result (isError) is an answer, not a failure of the call: the span says so without an error status.
  if (end.outcome !== "ok") {
    span.setAttribute("error.type", end.outcome);
    if (end.outcome !== "tool_error") span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
