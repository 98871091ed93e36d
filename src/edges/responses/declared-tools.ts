import { z } from "zod";
import type { GatewayToolServer } from "../../call/gateway-tool-loop.js";
import { FREEFORM_PARAMETERS, flatToolName, type HostedKind, type HostedTool, type ToolDefinition } from "../../core/chat-request.js";
import { quoteClientValue } from "../../core/client-text.js";
import { invalidField, parseAt } from "./invalid-field.js";
import { mcpServerOf } from "./mcp-tools.js";
import type { WireTool } from "./response-object.js";
import { functionTool } from "./responses-schema.js";
import type { DeclaredCall } from "./to-responses.js";

/** Hosted tools of the Responses API, by declared type, and what each does across providers. */
const HOSTED_KINDS = new Map<string, HostedKind>([
  ["web_search", "web_search"],
  ["web_search_preview", "web_search"],
  ["web_search_2025_08_26", "web_search"],
  ["web_search_preview_2025_03_11", "web_search"],
  ["file_search", "file_search"],
  ["code_interpreter", "code_interpreter"],
  ["image_generation", "image_generation"],
  ["computer", "other"],
  ["computer_use", "other"],
  ["computer_use_preview", "other"],
  ["local_shell", "other"],
  ["shell", "other"],
  ["apply_patch", "other"],
  ["tool_search", "other"],
]);

/** Whether a declared type is a hosted tool of the Responses API (`mcp` included: the gateway runs those itself). */
export function isHostedType(type: string): boolean {
  return HOSTED_KINDS.has(type) || type === "mcp";
}

const customTool = z.object({
  type: z.literal("custom"),
  name: z.string(),
  description: z.string().nullish(),
  // `{"type": "text"}` or `{"type": "grammar", "syntax": …, "definition": …}`: kept for a Responses upstream.
  format: z.record(z.string(), z.unknown()).nullish(),
});

const namespaceTool = z.object({
  type: z.literal("namespace"),
  name: z.string().min(1),
  description: z.string().nullish(),
  tools: z.array(z.unknown()),
});

export interface DeclaredTools {
  /** As the response repeats them: the caller's own declarations. */
  readonly echo: readonly WireTool[];
  readonly tools: readonly ToolDefinition[];
  readonly hosted: readonly HostedTool[];
  /** `mcp` tools: servers whose tools the gateway runs for this call. */
  readonly gateway: readonly GatewayToolServer[];
  /** Canonical names that are called back as custom tool calls or namespace members. */
  readonly calls: ReadonlyMap<string, DeclaredCall>;
  /** Per canonical tool: the path of its declaration (`tools[4].tools[1]`), for errors that name it. */
  readonly paths: readonly string[];
}

type Member = { readonly namespace: string; readonly description: string };

function typeOf(value: unknown): unknown {
  return value !== null && typeof value === "object" ? (value as { type?: unknown }).type : undefined;
}

/**
 * The `tools` of a Responses request as canonical ones. Function tools are
 * themselves; `custom` (freeform) tools are functions of one string
 * (FREEFORM_PARAMETERS) marked freeform; `namespace` tools are flattened to
 * `namespace__member` (Codex's own flat form) and restored by name in the
 * answer; hosted tools (`web_search`, …) are offers the pipeline carries to
 * a target that runs them or an equivalent (providers/hosted-tools.ts).
 */
export function declaredTools(wire: readonly unknown[]): DeclaredTools {
  const tools: ToolDefinition[] = [];
  const hosted: HostedTool[] = [];
  const gateway: GatewayToolServer[] = [];
  const calls = new Map<string, DeclaredCall>();
  const paths: string[] = [];
  const echo: WireTool[] = [];

  /** Declares one function or custom tool; returns how the response repeats it. */
  const member = (value: unknown, at: string, ns: Member | undefined): WireTool => {
    const type = typeOf(value);
    const place = (name: string) => {
      const flat = ns ? flatToolName(ns.namespace, name) : name;
      if (tools.some((t) => t.name === flat)) invalidField(`${at}.name`, `${quoteClientValue(flat, 64)} is declared twice`);
      return { flat, namespace: ns ? { name: ns.namespace, description: ns.description, member: name } : undefined };
    };
    if (type === "function") {
      const t = parseAt(functionTool, value, at);
      const { flat, namespace } = place(t.name);
      tools.push({
        name: flat,
        description: t.description ?? "",
        parameters: t.parameters ?? { type: "object", properties: {} },
        // `strict` goes upstream only when the caller set it: OpenAI's own default is not something every provider can do.
        strict: t.strict ?? undefined,
        ...(namespace ? { namespace } : {}),
      });
      if (namespace) calls.set(flat, { freeform: false, namespace: { name: namespace.name, member: namespace.member } });
      paths.push(at);
      return { type: "function", name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? null };
    } else if (type === "custom") {
      const t = parseAt(customTool, value, at);
      const { flat, namespace } = place(t.name);
      tools.push({
        name: flat,
        description: t.description ?? "",
        parameters: FREEFORM_PARAMETERS,
        freeform: t.format ? { format: t.format } : {},
        ...(namespace ? { namespace } : {}),
      });
      calls.set(flat, { freeform: true, ...(namespace ? { namespace: { name: namespace.name, member: namespace.member } } : {}) });
      paths.push(at);
      return value as WireTool;
    }
    return invalidField(`${at}.type`, `${typeof type === "string" ? quoteClientValue(type, 64) : "this"} tool type is not served${ns ? " inside a namespace" : ""}: declare function, custom, namespace or hosted tools`);
  };

  wire.forEach((value, i) => {
    const at = `tools[${i}]`;
    const type = typeOf(value);
    if (type === "mcp") {
      const server = mcpServerOf(value, at);
      if (gateway.some((s) => s.server === server.server)) invalidField(`${at}.server_label`, `${quoteClientValue(server.server, 64)} is declared twice`);
      gateway.push(server);
      echo.push(value as WireTool);
      return;
    }
    if (typeof type === "string" && HOSTED_KINDS.has(type)) {
      const declaration = value as Record<string, unknown>;
      hosted.push({ type, kind: HOSTED_KINDS.get(type)!, origin: "openai", declaration });
      echo.push(declaration as WireTool);
      return;
    }
    if (type === "namespace") {
      const n = parseAt(namespaceTool, value, at);
      const ns = { namespace: n.name, description: n.description ?? "" };
      n.tools.forEach((t, j) => member(t, `${at}.tools[${j}]`, ns));
      echo.push(value as WireTool);
      return;
    }
    echo.push(member(value, at, undefined));
  });
  return { echo, tools, hosted, gateway, calls, paths };
}
