import type { ConfigInput } from "./schema.js";

/**
 * The configuration used when no `--config` is given: one provider, the
 * built-in upstream simulator, and a few aliases that show its behaviours.
 * It needs no API key, so a fresh checkout streams at once, and it serves
 * the console open, so the demo can be watched and tried in a browser.
 * `demo-tools` behaves as a model in an agent's tool loop (calls the
 * declared tools, then answers with their results), so an agent SDK's loop
 * ends; `demo-thinking` reaches the same simulator over the Anthropic wire,
 * so the Messages edge's signed thinking can be tried without a config.
 */
export function defaultConfig(simulatorBaseUrl: string): ConfigInput {
  return {
    console: { access: "open" },
    providers: {
      simulator: { kind: "openai", baseUrl: simulatorBaseUrl },
      "simulator-anthropic": { kind: "anthropic", baseUrl: simulatorBaseUrl },
    },
    models: {
      demo: { provider: "simulator", model: "sim-1?tokens=40&delay_ms=20" },
      "demo-slow": { provider: "simulator", model: "sim-1?tokens=30&ttft_ms=800&delay_ms=200" },
      "demo-tools": { provider: "simulator", model: "sim-1?tokens=8&tools=2" },
      "demo-thinking": { provider: "simulator-anthropic", model: "sim-1?reasoning=12&tokens=30&delay_ms=20" },
      "demo-embed": { provider: "simulator", model: "sim-embed" },
    },
  };
}
