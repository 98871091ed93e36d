import { type ChildProcess, spawn } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { createLineSplitter } from "./line-splitter.js";
import { STDIO_TOO_LARGE_CODE } from "./upstream-errors.js";

/** How long a child has after SIGTERM before SIGKILL. */
export const KILL_GRACE_MS = 2_000;

export interface StdioProcessOptions {
  readonly command: string;
  readonly args: readonly string[];
  /** The child's whole environment (upstreams.ts builds it: PATH, HOME and the server's own). */
  readonly env: Record<string, string>;
  readonly cwd?: string;
  /** The longest line (one JSON-RPC message) read from its stdout: `mcp.maxResultBytes`. */
  readonly maxLineBytes: number;
  readonly onStderr: (chunk: Buffer) => void;
}

/**
 * A Transport over a child's stdin and stdout, hand-written instead of the
 * SDK's StdioClientTransport because that one's ReadBuffer holds stdout
 * until a newline without any bound (a server writing one 1 GB line takes
 * 1 GB of the gateway's memory) and gives no way to bound it from outside.
 * Here a line past `maxLineBytes` is skipped as it streams and, when its
 * `id` can be read from its last bytes (the SDK writes `id` last), that
 * request is answered with an error the upstream side turns into
 * `tooLarge`. It also exposes the child's pid and ends it with SIGTERM,
 * then SIGKILL after KILL_GRACE_MS.
 */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private closed = false;
  private exited?: Promise<void>;

  constructor(private readonly options: StdioProcessOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const { command, args, env, cwd, maxLineBytes, onStderr } = this.options;
    const child = spawn(command, [...args], { env, ...(cwd !== undefined ? { cwd } : {}), stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
    this.child = child;
    this.exited = new Promise((resolve) => child.once("close", () => resolve()));
    const splitter = createLineSplitter(
      maxLineBytes,
      (line) => this.receive(line),
      (bytes, tail) => this.oversized(bytes, tail),
    );
    child.stdout.on("data", (chunk: Buffer) => splitter.push(chunk));
    child.stderr.on("data", onStderr);
    child.stdin.on("error", (error) => this.onerror?.(error));
    child.once("close", () => this.ended());
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error) => {
        reject(error);
        this.ended();
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closed || !stdin.writable) throw new Error("the MCP server process is not running");
    if (!stdin.write(`${JSON.stringify(message)}\n`)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          stdin.off("drain", done);
          this.child?.off("close", done);
          resolve();
        };
        stdin.once("drain", done);
        this.child?.once("close", done);
      });
    }
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.ended();
      return;
    }
    child.stdin?.end();
    child.kill("SIGTERM");
    const kill = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
    await this.exited;
    clearTimeout(kill);
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  private receive(line: Buffer): void {
    if (line.length === 0 || (line.length === 1 && line[0] === 0x0d)) return;
    try {
      this.onmessage?.(JSONRPCMessageSchema.parse(JSON.parse(line.toString("utf8"))));
    } catch {
      // Never echo the line: it may hold what the server was given.
      this.onerror?.(new Error("the MCP server wrote a line that is not a JSON-RPC message"));
    }
  }

  private oversized(bytes: number, tail: Buffer): void {
    const id = /"id"\s*:\s*(-?\d+)\s*\}\s*\r?$/.exec(tail.toString("latin1"))?.[1];
    if (id === undefined) {
      this.onerror?.(new Error(`the MCP server wrote a ${bytes}-byte line, over mcp.maxResultBytes, without a readable id`));
      return;
    }
    this.onmessage?.({ jsonrpc: "2.0", id: Number(id), error: { code: STDIO_TOO_LARGE_CODE, message: "answer larger than mcp.maxResultBytes", data: { read: bytes } } });
  }
}
