// Structured outputs through the OpenAI-compatible facade with the official
// SDK's zod helper: the answer is parsed and checked against the schema.
// Build once (npm run build), then: SLUICE_URL=http://127.0.0.1:8080 node dist/examples/structured-output.js
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const baseUrl = process.env.SLUICE_URL ?? "http://127.0.0.1:8080";
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused" });
const Forecast = z.object({ city: z.string(), days: z.number().int() });
const completion = await openai.chat.completions.parse({
  model: "demo",
  messages: [{ role: "user", content: "Forecast for Lima?" }],
  response_format: zodResponseFormat(Forecast, "forecast"),
});
console.log(JSON.stringify(completion.choices[0]!.message.parsed));
