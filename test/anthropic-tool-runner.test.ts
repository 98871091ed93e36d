import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * The official SDK's tool runner (`client.beta.messages.toolRunner`) runs
 * its loop on a message thread: `thread: {type: "create"}` on the first
 * turn, then `continue` with only the new messages. The gateway stores no
 * thread: `create` changes no answer and is dropped, named; `continue`
 * would answer without the history, so it is refused with Anthropic's
 * `thread_not_found`, on which the SDK resends the whole conversation.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { claude: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") } },
      models: { runner: { provider: "claude", model: "sim-1?seed=5&tokens=3&tools=1" } },
    }),
  });
});
afterAll(() => h.close());

describe("the Anthropic SDK's tool runner", () => {
  it("runs the tool and ends with an answer quoting its result, over a gateway that stores no thread", async () => {
    const client = new Anthropic({ baseURL: h.url, apiKey: "unused", maxRetries: 0 });
    const ran: unknown[] = [];
    const weather = betaTool({
      name: "get_weather",
      description: "The weather in a city",
      inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      run: (input) => {
        ran.push(input);
        return "sunny-7e1f";
      },
    });
    const final = await client.beta.messages.toolRunner({ model: "runner", max_tokens: 256, messages: [{ role: "user", content: "Weather in Oslo?" }], tools: [weather] });
    expect(ran).toHaveLength(1);
    expect(
      final.content
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join(""),
    ).toBe("get_weather returned: sunny-7e1f");
  });

  const post = (thread: unknown) =>
    request(`${h.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "unused", "anthropic-beta": "message-threads-2026-08-12" },
      body: JSON.stringify({ model: "runner", max_tokens: 64, messages: [{ role: "user", content: "#sim tools=0\nHi" }], thread }),
    });

  it("a thread to create: answered, and `thread` named as dropped", async () => {
    const res = await post({ type: "create" });
    expect(res.statusCode, await res.body.text()).toBe(200);
    expect(String(res.headers["sluice-dropped-params"]).split(",")).toContain("thread");
  });

  it("a thread to continue: refused with Anthropic's thread_not_found, which has the SDK resend the conversation", async () => {
    const res = await post({ type: "continue", previous_message_id: "msg_elsewhere" });
    expect(res.statusCode).toBe(400);
    expect(await res.body.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringMatching(/^thread: /), details: { error_code: "thread_not_found" } } });
  });
});
