import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mcpSchema } from "../src/config/mcp-schema.js";
import { MCP_ERRORS, McpError } from "../src/mcp/contract.js";
import { createMcpUpstreams } from "../src/mcp/upstream/upstreams.js";
import { capturedLogger } from "./helpers/captured-logger.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/mcp-stdio-server.mjs", import.meta.url));

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const signal = () => new AbortController().signal;
const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

function setUp(options: { stdio?: Record<string, unknown>; mcp?: Record<string, unknown>; env?: NodeJS.ProcessEnv } = {}) {
  const { logger, lines } = capturedLogger();
  const settings = mcpSchema.parse({ servers: { local: { stdio: { command: process.execPath, args: [FIXTURE], ...options.stdio }, timeoutMs: 10_000 } }, ...options.mcp });
  const env = options.env ?? { PATH: process.env.PATH, HOME: process.env.HOME };
  const upstreams = createMcpUpstreams(settings, { log: logger, env });
  closers.push(() => upstreams.close());
  return { upstreams, lines };
}

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

const pidOf = async (upstreams: ReturnType<typeof setUp>["upstreams"]) => Number(text(await upstreams.callTool("local", "pid", {}, { signal: signal() })));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("MCP upstreams over stdio", () => {
  it("starts the server, lists its tools and calls them", async () => {
    const { upstreams } = setUp();
    const tools = await upstreams.tools("local", signal());
    expect(tools.map((t) => t.name).sort()).toEqual(["local_crash", "local_echo", "local_env", "local_pid", "local_shout"]);
    expect(text(await upstreams.callTool("local", "echo", { text: "hi" }, { signal: signal() }))).toBe("hi");
    expect(upstreams.health().local).toMatchObject({ state: "up", transport: "stdio", tools: 5, restarts: 0 });
    // No prompts or resources: empty listings, not failures.
    expect(await upstreams.prompts("local", signal())).toEqual([]);
  });

  it("gives the child PATH, HOME and its own variables only, never the gateway's other environment", async () => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, GATEWAY_SECRET: "provider-key", MCP_TOKEN_SOURCE: "token-value" };
    const { upstreams } = setUp({ stdio: { env: { PLAIN: "plain" }, envFromEnv: { TOKEN: "MCP_TOKEN_SOURCE" } }, env });
    const read = async (name: string) => text(await upstreams.callTool("local", "env", { name }, { signal: signal() }));
    expect(await read("PLAIN")).toBe("plain");
    expect(await read("TOKEN")).toBe("token-value");
    expect(await read("PATH")).toBe(process.env.PATH);
    expect(await read("GATEWAY_SECRET")).toBe("");
    expect(await read("MCP_TOKEN_SOURCE")).toBe("");
  });

  it("fails a call in flight at once when the process dies, and serves the next call on a restarted process", async () => {
    const { upstreams, lines } = setUp();
    const before = await pidOf(upstreams);
    const error = await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.upstreamFailed);
    const after = await pidOf(upstreams);
    expect(after).not.toBe(before);
    expect(alive(before)).toBe(false);
    expect(upstreams.health().local).toMatchObject({ state: "up", restarts: 1 });
    expect(lines.some((l) => l.event === "mcp.stdio_exited")).toBe(true);
  });

  it("tells listeners the listing may have changed when a new process starts", async () => {
    const { upstreams } = setUp();
    await upstreams.tools("local", signal());
    const changed = new Promise<string>((resolve) => upstreams.onListChanged(resolve));
    await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    expect(await changed).toBe("local");
  });

  it("stays down past maxRestarts within the window", async () => {
    const { upstreams, lines } = setUp({ stdio: { maxRestarts: 1, restartWindowMs: 3_600_000 } });
    await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    expect(upstreams.health().local).toMatchObject({ state: "down", restarts: 1 });
    const down = await rejection(upstreams.callTool("local", "echo", { text: "x" }, { signal: signal() }));
    expect(down.code).toBe(MCP_ERRORS.upstreamFailed);
    expect(lines.find((l) => l.event === "mcp.stdio_down")).toMatchObject({ server: "local", setting: "maxRestarts" });
  });

  it("starts again once the oldest restart has left restartWindowMs", async () => {
    const { upstreams } = setUp({ stdio: { maxRestarts: 1, restartWindowMs: 1_000 } });
    const first = await pidOf(upstreams);
    await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    await rejection(upstreams.callTool("local", "crash", {}, { signal: signal() }));
    expect(upstreams.health().local?.state).toBe("down");
    await vi.waitFor(() => expect(upstreams.health().local?.state).toBe("up"), { timeout: 10_000 });
    expect(await pidOf(upstreams)).not.toBe(first);
  });

  it("refuses an answer line over mcp.maxResultBytes without holding it, and the process keeps serving", async () => {
    const { upstreams } = setUp({ mcp: { maxResultBytes: 4_096 } });
    const before = await pidOf(upstreams);
    const error = await rejection(upstreams.callTool("local", "echo", { text: "y".repeat(100_000) }, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.tooLarge);
    expect(error.message).toContain("mcp.maxResultBytes");
    expect(text(await upstreams.callTool("local", "echo", { text: "small" }, { signal: signal() }))).toBe("small");
    expect(await pidOf(upstreams)).toBe(before);
  });

  it("logs stderr as lines, and under a flood keeps serving while it counts and drops what is over maxStderrBytesPerSecond", async () => {
    const { upstreams, lines } = setUp({ stdio: { env: { MCP_TEST_FLOOD_STDERR: "1" }, maxStderrBytesPerSecond: 2_048 } });
    for (let i = 0; i < 5; i++) expect(text(await upstreams.callTool("local", "echo", { text: `call ${i}` }, { signal: signal() }))).toBe(`call ${i}`);
    await vi.waitFor(() => expect(lines.some((l) => l.event === "mcp.stderr_dropped")).toBe(true), { timeout: 10_000 });
    const logged = lines.filter((l) => l.event === "mcp.stderr");
    expect(logged.length).toBeGreaterThan(0);
    const dropped = lines.filter((l) => l.event === "mcp.stderr_dropped").reduce((sum, l) => sum + (l.lines as number), 0);
    expect(dropped).toBeGreaterThan(logged.length);
    // What was logged stays within the rate: at most 2 KiB per second that has passed, plus the first second.
    const bytes = logged.reduce((sum, l) => sum + (l.line as string).length + 1, 0);
    const seconds = new Set(logged.map((l) => Math.floor((l.time as number) / 1000))).size;
    expect(bytes).toBeLessThanOrEqual(2_048 * seconds);
  });

  it("logs a shout line within the rate", async () => {
    const { upstreams, lines } = setUp();
    expect(text(await upstreams.callTool("local", "shout", { bytes: 100 }, { signal: signal() }))).toBe("shouted");
    await vi.waitFor(() => expect(lines.find((l) => l.event === "mcp.stderr")).toMatchObject({ server: "local", line: "e".repeat(99) }));
  });

  it("ends its children at close", async () => {
    const { upstreams } = setUp();
    const pid = await pidOf(upstreams);
    await upstreams.close();
    expect(alive(pid)).toBe(false);
    const error = await rejection(upstreams.callTool("local", "echo", { text: "x" }, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.upstreamFailed);
  });
});
