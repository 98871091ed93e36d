import { describe, expect, it } from "vitest";
import type { FieldTable } from "../../src/core/field-rules.js";
import { ANTHROPIC_FIELDS } from "../../src/edges/anthropic/anthropic-fields.js";
import { messagesBody } from "../../src/edges/anthropic/anthropic-schema.js";
import { CHAT_FIELDS } from "../../src/edges/openai/chat-fields.js";
import { UNHONOURED_FIELDS } from "../../src/edges/openai/request-fields.js";
import { RESPONSES_FIELDS } from "../../src/edges/responses/responses-fields.js";
import { responsesBody } from "../../src/edges/responses/responses-schema.js";

/**
 * The per-edge field tables (docs/streams.md is generated from them) name
 * every top-level field each edge's schema takes, so the documentation
 * cannot leave one out.
 */

/** Every plain field name a table's rows mention (`tools, tool_choice` → both; `output_config.effort` → output_config). */
const named = (table: FieldTable): Set<string> => new Set(table.flatMap((rule) => rule.field.split(", ").map((f) => f.replace(/[.[].*$/, ""))));

describe("field tables", () => {
  it("the Messages table names every top-level field of the Messages schema", () => {
    const rows = named(ANTHROPIC_FIELDS);
    expect(Object.keys(messagesBody.shape).filter((f) => !rows.has(f))).toEqual([]);
  });

  it("the Responses table names every top-level field of the Responses schema", () => {
    const rows = named(RESPONSES_FIELDS);
    expect(Object.keys(responsesBody.shape).filter((f) => !rows.has(f))).toEqual([]);
  });

  it("the Chat Completions edge drops exactly the table's dropped rows", () => {
    expect([...UNHONOURED_FIELDS].sort()).toEqual(
      CHAT_FIELDS.filter((r) => r.treatment === "dropped")
        .map((r) => r.field)
        .sort(),
    );
    expect(UNHONOURED_FIELDS.has("prompt_cache_key")).toBe(false);
  });

  it("every row says why", () => {
    for (const rule of [...ANTHROPIC_FIELDS, ...RESPONSES_FIELDS, ...CHAT_FIELDS]) expect(rule.why.length, rule.field).toBeGreaterThan(10);
  });
});
