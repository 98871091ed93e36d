import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * The `mcp` scenario's load generator, a process of its own: `lanes`
 * callers at once, each an official SDK client with a session of its own
 * (streamable HTTP), each making `warmUp` unmeasured requests and then
 * `perLane` measured ones back to back. A request is `tools/call` of
 * `tool` with `{text}`, or `tools/list`. It prints one JSON line: every
 * measured request's milliseconds (send → answer parsed) and the errors
 * (a thrown error, a call answered `isError`, or an echo that is not the
 * text sent).
 */
export interface McpLoadSpec {
  readonly url: string;
  /** Sent as `Authorization: Bearer …` (the gateway's virtual key); none to the server directly. */
  readonly bearer?: string;
  readonly op: "call" | "list";
  readonly tool: string;
  readonly text: string;
  readonly lanes: number;
  readonly perLane: number;
  readonly warmUp: number;
}

export interface McpLoadResult {
  readonly ms: number[];
  readonly errors: number;
  readonly firstError?: string;
}

async function lane(spec: McpLoadSpec, ms: number[], failed: (message: string) => void): Promise<void> {
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), spec.bearer ? { requestInit: { headers: { authorization: `Bearer ${spec.bearer}` } } } : {});
  const client = new Client({ name: "sluice-bench", version: "1.0.0" });
  await client.connect(transport);
  const once = async () => {
    if (spec.op === "list") {
      await client.listTools();
      return;
    }
    const result = await client.callTool({ name: spec.tool, arguments: { text: spec.text } });
    if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content).slice(0, 200)}`);
    // The echo must come back as sent: through a gateway with a redact policy, restored from its placeholders.
    const said = (result.content as Array<{ type: string; text?: string }>)[0];
    if (said?.type !== "text" || said.text !== spec.text) throw new Error("the echo differs from the text sent (a placeholder not restored?)");
  };
  try {
    for (let i = 0; i < spec.warmUp + spec.perLane; i++) {
      const t0 = performance.now();
      try {
        await once();
        if (i >= spec.warmUp) ms.push(performance.now() - t0);
      } catch (error) {
        failed(error instanceof Error ? error.message : String(error));
      }
    }
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as McpLoadSpec;
  const ms: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const failed = (message: string) => {
    errors++;
    firstError ??= message.slice(0, 300);
  };
  await Promise.all(Array.from({ length: spec.lanes }, () => lane(spec, ms, failed)));
  const result: McpLoadResult = { ms, errors, ...(firstError ? { firstError } : {}) };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`mcp load failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
