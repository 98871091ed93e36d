// Streams one answer through the OpenAI-compatible facade with the official openai SDK.
// Run: node examples/openai-sdk.mjs
// Another gateway: SLUICE_URL=https://sluice.internal:8443 node examples/openai-sdk.mjs
import OpenAI from "openai";

const openai = new OpenAI({ baseURL: `${process.env.SLUICE_URL ?? "http://127.0.0.1:8080"}/v1`, apiKey: "unused" });
const stream = await openai.chat.completions.create({
  model: "demo",
  messages: [{ role: "user", content: "Hello" }],
  stream: true,
});
// An error after the first chunk raises APIError here: the answer is truncated.
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? "");
process.stdout.write("\n");
