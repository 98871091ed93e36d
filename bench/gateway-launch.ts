import { type Proc, startUntil } from "./procs.js";

/** Upstream timeouts far above any benchmark stream: a slow machine must show as latency, never as a timeout. */
export const BENCH_TIMEOUTS = { idleMs: 120_000, totalMs: 600_000, firstTokenMs: 120_000, headersMs: 60_000 };

/**
 * The gateway runs as `npm start` runs it (docs/operations.md, "Deployment").
 * BENCH_GATEWAY_NODE_FLAGS replaces these for an A/B of runtime settings
 * (e.g. `--max-semi-space-size=64 --heap-growing-percent=0` for V8's own heap growth).
 */
export const GATEWAY_NODE_FLAGS = (process.env.BENCH_GATEWAY_NODE_FLAGS ?? "--max-semi-space-size=64").split(" ").filter(Boolean);

/** The URL from the gateway's `server.listening` log line, undefined for any other line. */
export const listeningUrl = (line: string): string | undefined => (line.includes('"server.listening"') ? (JSON.parse(line) as { url: string }).url : undefined);

/**
 * A gateway built in `root` (its `dist/src/main.js`, run from `root`, so that
 * two builds of two commits run side by side), on `configFile` and `port`
 * (0: any free one), ready once it listens.
 */
export async function launchGateway(root: string, configFile: string, port = 0): Promise<{ proc: Proc; url: string }> {
  const { proc, value } = await startUntil(process.execPath, [...GATEWAY_NODE_FLAGS, `${root}/dist/src/main.js`, "--config", configFile, "--port", String(port)], listeningUrl, { cwd: root });
  return { proc, url: value };
}
