import type { FieldTable } from "../../core/field-rules.js";

/**
 * `anthropic-beta` values an Anthropic target is sent. Anthropic answers a
 * value it does not know with a 400, so only these go on: the features the
 * gateway carries (thinking between tool calls, context management, tool
 * search and deferred tools, effort, fine-grained tool streaming, one-hour
 * cache, structured outputs) and the ones that change nothing in the body's
 * form. Others are dropped and named (`anthropic-beta=<value>`).
 */
export const FORWARDED_BETAS: ReadonlySet<string> = new Set([
  "claude-code-20250219",
  "interleaved-thinking-2025-05-14",
  "context-management-2025-06-27",
  "advanced-tool-use-2025-11-20",
  "tool-search-tool-2025-10-19",
  "effort-2025-11-24",
  "fine-grained-tool-streaming-2025-05-14",
  "token-efficient-tools-2025-02-19",
  "extended-cache-ttl-2025-04-11",
  "prompt-caching-2024-07-31",
  "output-128k-2025-02-19",
  "context-1m-2025-08-07",
  "structured-outputs-2025-11-13",
]);

const ANTHROPIC_ONLY = "forwarded to Anthropic targets; other targets get the request without it, named in sluice-dropped-params";

/**
 * `POST /v1/messages` (and count_tokens): what the edge does with each
 * field Claude Code, the AI SDK and the official SDK send. The schema
 * (anthropic-schema.ts) follows these rows; a field in no row is refused
 * by name as unknown.
 */
export const ANTHROPIC_FIELDS: FieldTable = [
  { field: "model, max_tokens, messages, system, stream", treatment: "honoured", why: "the request itself." },
  { field: "temperature, top_p, top_k, stop_sequences", treatment: "honoured", why: "sampling; a target that cannot honour one refuses it by name unless the alias sets dropUnsupportedParams." },
  {
    field: "mcp_servers",
    treatment: "honoured",
    why: "the MCP connector, run by the gateway: `name` must be a server of mcp.servers (the url is never called), the key's granted tools of it are declared to the model and its calls run through the gateway's grants, prices and audit, shown as mcp_tool_use / mcp_tool_result blocks; authorization_token is refused (the gateway holds the server's credentials).",
  },
  { field: "tools, tool_choice", treatment: "honoured", why: "custom tools; tool_choice forcing a tool that is not declared is refused, since the answer would not call it." },
  { field: "messages[] role system", treatment: "honoured", why: "a system message where it stands (Claude Code sends reminders so); Anthropic targets receive it in the system prompt." },
  { field: "thinking", treatment: "honoured", why: "enabled (a budget), adaptive (effort high unless output_config says otherwise) or disabled: the canonical reasoning settings." },
  {
    field: "thinking.display",
    treatment: "carried",
    why: "forwarded to Anthropic targets; elsewhere it says whether the answer carries thinking text (omitted: none, summarized and updates: as the target returns it).",
  },
  { field: "output_config.effort", treatment: "honoured", why: "the canonical reasoning effort (max is xhigh)." },
  { field: "output_config.format", treatment: "honoured", why: "a JSON schema the answer must follow; refused by name where no target can enforce it." },
  { field: "metadata.user_id", treatment: "honoured", why: "the end user: Anthropic's metadata.user_id, OpenAI's user, the access log's user." },
  { field: "service_tier", treatment: "honoured", why: "auto or standard_only, as Anthropic targets take it (OpenAI's auto and default elsewhere)." },
  {
    field: "cache_control",
    treatment: "carried",
    why: `on tools, system blocks, message blocks and tool results: kept as breakpoints on Anthropic targets (the caller's first, with promptCache: auto's within Anthropic's four); OpenAI and Gemini targets cache prefixes on their own, so there it is dropped and named.`,
  },
  { field: "tools[].defer_loading", treatment: "carried", why: `${ANTHROPIC_ONLY}; the tool is still declared there.` },
  { field: "tools[].eager_input_streaming", treatment: "carried", why: `${ANTHROPIC_ONLY}; tool input streams either way.` },
  {
    field: "context_management",
    treatment: "carried",
    why: `${ANTHROPIC_ONLY}. clear_thinking is what the gateway does anyway on other targets: they never receive earlier turns' thinking.`,
  },
  { field: "header anthropic-beta", treatment: "carried", why: "values an Anthropic target understands (FORWARDED_BETAS in anthropic-fields.ts) are forwarded; others are dropped and named anthropic-beta=<value>." },
  {
    field: "thread",
    treatment: "dropped",
    why: "type create (the SDK's tool runner): the gateway stores no thread, the conversation is all in the request; named. type continue sends only new messages: refused with error_code thread_not_found, on which the SDK resends the whole conversation.",
  },
  { field: "query beta=true", treatment: "ignored", why: "the SDKs' beta surface is the same API here." },
  { field: "header anthropic-version, x-claude-code-session-id, x-app, x-stainless-*", treatment: "ignored", why: "they describe the client, not the answer." },
  { field: "thinking blocks with an empty signature", treatment: "dropped", why: "resumed transcripts carry them; no target could verify them, and the text was the model's own." },
  { field: "citations (non-empty), tool_result images, container", treatment: "refused", why: "it changes the answer, and the gateway has no way to honour it." },
  { field: "any other field", treatment: "refused", why: "named as not supported: a misspelt or newer field is never ignored in silence." },
];
