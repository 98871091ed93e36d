import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RequestPolicy } from "../compliance/pii-policy.js";
import { createPiiVault, createRestorer, type PiiVault } from "../compliance/pii-vault.js";
import { redactJson } from "../compliance/redact-request.js";
import { MCP_ERRORS, McpError } from "./contract.js";

/** A tool call's arguments as they may leave, and how its result is turned back for the caller. */
export interface ScreenedArguments {
  readonly args: Record<string, unknown>;
  /** Puts the caller's values back where the upstream's answer holds their placeholders (the same result when nothing was redacted). */
  restore(result: CallToolResult): CallToolResult;
}

const AS_IS = (result: CallToolResult): CallToolResult => result;

/**
 * The key's (and team's) PII policy applied to a tool call, with the same
 * placeholder machinery as a chat request (compliance/pii-vault.ts): under
 * `redact` every string (and object key, and number that is itself a
 * value) in the arguments is replaced by `<KIND_N>` before it leaves, and
 * the result's texts get the values back; `block` refuses a call holding
 * any; `local-only` refuses one holding any too, since an MCP server is not
 * a local target the call could be moved to, and a key marked `localOnly`
 * may call no tool at all. The refusal names kinds and counts, never values.
 */
export function screenArguments(args: Record<string, unknown>, policy: RequestPolicy): ScreenedArguments {
  if (policy.localOnly) throw new McpError(MCP_ERRORS.blocked, "this key's calls must stay on local targets, and an MCP server is not one: tool calls are refused", { policy: "localOnly" });
  if (policy.mode === "off") return { args, restore: AS_IS };
  const vault = createPiiVault(policy.custom);
  const redacted = redactJson(args, (text) => vault.redact(text, policy.kinds), true) as Record<string, unknown>;
  if (vault.size === 0) return { args, restore: AS_IS };
  if (policy.mode !== "redact") {
    const kinds = Object.keys(vault.counts).sort().join(", ");
    const why = policy.mode === "block" ? "which the policy for this key blocks" : "which the policy for this key keeps on local targets, and an MCP server is not one";
    throw new McpError(MCP_ERRORS.blocked, `the tool call's arguments hold personal data or secrets (${kinds}), ${why}`, { kinds: Object.keys(vault.counts).sort() });
  }
  return { args: redacted, restore: (result) => restoreResult(result, vault) };
}

/** The result's texts (text content, embedded text resources, structured content's strings) with the vault's placeholders turned back into values. */
function restoreResult(result: CallToolResult, vault: PiiVault): CallToolResult {
  const text = (value: string): string => {
    const restorer = createRestorer(vault);
    return restorer.push(value) + restorer.flush();
  };
  const content = result.content.map((part) => {
    if (part.type === "text") return { ...part, text: text(part.text) };
    if (part.type === "resource" && "text" in part.resource) return { ...part, resource: { ...part.resource, text: text(part.resource.text) } };
    return part;
  });
  const structured = result.structuredContent === undefined ? {} : { structuredContent: redactJson(result.structuredContent, text, false) as Record<string, unknown> };
  return { ...result, content, ...structured };
}

/** The arguments as an audit event may hold them (`auditArguments`): every kind of value the detectors know replaced, whatever the key's policy. */
export function auditView(args: Record<string, unknown>): unknown {
  const vault = createPiiVault();
  return redactJson(args, (text) => vault.redact(text), true);
}
