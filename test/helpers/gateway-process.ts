import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { ConfigInput } from "../../src/config/schema.js";
import { type Started, startProcess } from "./processes.js";

export interface GatewayProcess extends Started {
  readonly url: string;
  readonly pid: number;
  /** Resident set size in bytes, from /proc. */
  rss(): number;
}

/** The compiled gateway as its own process, so its memory and exit status are its own. */
export async function startGatewayProcess(config: ConfigInput): Promise<GatewayProcess> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-gw-"));
  const file = join(dir, "sluice.yaml");
  await writeFile(file, stringify(config));
  const started = await startProcess(["dist/src/main.js", "--config", file, "--port", "0"], (l) => l.event === "server.listening");
  const pid = started.child.pid!;
  return {
    ...started,
    url: started.line.url as string,
    pid,
    rss() {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
      return kb * 1024;
    },
  };
}
