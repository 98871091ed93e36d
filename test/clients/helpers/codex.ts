import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ClientGateway } from "./gateway.js";
import { type Ran, runClient, scratch } from "./run.js";
import { bin } from "./tier.js";

/**
 * `codex exec` headless in a scratch home, its custom provider pointed at
 * the gateway's Responses edge; `websocket` turns on the provider's
 * WebSocket transport (`supports_websockets`), as the WebSocket tier tests it;
 * `config` adds lines at the end of config.toml (an `[mcp_servers.…]` table).
 */
export async function runCodex(
  g: Pick<ClientGateway, "url">,
  key: string,
  prompt: string,
  options: { readonly websocket?: boolean; readonly config?: readonly string[]; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<{ ran: Ran; work: string; last: string }> {
  const s = await scratch();
  const codexHome = join(s.home, ".codex");
  await mkdir(codexHome, { recursive: true });
  await writeFile(
    join(codexHome, "config.toml"),
    [
      `model = "agent"`,
      `model_provider = "sluice"`,
      `[model_providers.sluice]`,
      `name = "Sluice"`,
      `base_url = "${g.url}/v1"`,
      `wire_api = "responses"`,
      `env_key = "SLUICE_KEY"`,
      ...(options.websocket ? [`supports_websockets = true`] : []),
      // A refusal fails fast instead of being retried with backoff.
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ...(options.config ?? []),
      "",
    ].join("\n"),
  );
  const lastFile = join(s.home, "last-message.txt");
  const ran = await runClient(bin("codex"), ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json", "-o", lastFile, prompt], {
    cwd: s.work,
    env: { ...s.env, CODEX_HOME: codexHome, SLUICE_KEY: key, ...options.env },
  });
  return { ran, work: s.work, last: await readFile(lastFile, "utf8").catch(() => "") };
}
