// Structured outputs through the OpenAI-compatible facade with the official
// SDK's zod helper. Run from a checkout on Node 20:
//   npm run build && node dist/examples/structured-output.js [baseUrl] [model]
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const [baseUrl = "http://127.0.0.1:8080", model = "demo"] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused" });
const Forecast = z.object({ city: z.string(), days: z.number().int() });
const completion = await openai.chat.completions.parse({
  model,
  messages: [{ role: "user", content: "Forecast for Lima?" }],
  response_format: zodResponseFormat(Forecast, "forecast"),
});
console.log(JSON.stringify(completion.choices[0]!.message.parsed));
