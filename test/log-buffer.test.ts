import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { adopt } from "./helpers/processes.js";

/**
 * The default logger writes to fd 1 through a buffer, so it is tested in a
 * process of its own whose stdout is a pipe, as the gateway's is when a
 * log shipper reads it.
 */
const SCRIPT = `
import { createLogger } from ${JSON.stringify(new URL("../dist/src/logging/logger.js", import.meta.url).href)};
const log = createLogger("info");
log.info({ event: "first" });
process.stdin.on("data", (d) => {
  const [command, count] = String(d).trim().split(" ");
  const filler = "x".repeat(200);
  for (let i = 0; i < Number(count); i++) log.info({ event: "line", i, filler });
  if (command === "exit") process.exit(0);
});
`;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

function startChild() {
  const child = adopt(spawn(process.execPath, ["--input-type=module", "-e", SCRIPT], { stdio: ["pipe", "pipe", "inherit"] }));
  children.push(child);
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const waitFor = async (test: (l: Record<string, unknown>) => boolean) => {
    while (!lines.some(test)) await new Promise<void>((resolve) => waiters.push(resolve));
    return lines.find(test)!;
  };
  return { child, lines, waitFor };
}

describe("the default log destination", () => {
  it("writes a lone line without waiting for the buffer to fill", async () => {
    const { waitFor } = startChild();
    expect(await waitFor((l) => l.event === "first")).toMatchObject({ level: 30 });
  });

  it("writes every buffered line before the process exits", async () => {
    const { child, lines, waitFor } = startChild();
    await waitFor((l) => l.event === "first");
    // Both listened for before the exit: which of the two comes first differs between Node versions (22 closes stdout first).
    const exited = once(child, "exit");
    const closed = once(child.stdout!, "close");
    child.stdin!.write("exit 2000\n");
    await Promise.all([exited, closed]);
    const numbers = lines.filter((l) => l.event === "line").map((l) => l.i);
    expect(numbers).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it("drops what stdout cannot take, counts it, and says so once output drains", async () => {
    const { child, lines, waitFor } = startChild();
    await waitFor((l) => l.event === "first");
    // One synchronous burst of ~25 MB: more than the 8 MiB the buffer may hold.
    child.stdin!.write("burst 100000\n");
    const report = await waitFor((l) => l.event === "log.dropped");
    const written = lines.filter((l) => l.event === "line").length;
    expect(report.lines).toBeGreaterThan(0);
    expect(written + (report.lines as number)).toBe(100_000);
  });
});
