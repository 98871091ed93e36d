import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Started, startProcess } from "./helpers/processes.js";

const run = promisify(execFile);

/** Each example, and the command a reader runs it with (docs/clients.md, "Client examples"). */
const EXAMPLES: Array<{ file: string; command: string[] }> = [
  { file: "examples/connect-client.ts", command: [process.execPath, "dist/examples/connect-client.js"] },
  { file: "examples/grpc-js-client.mjs", command: [process.execPath, "examples/grpc-js-client.mjs"] },
  { file: "examples/openai-sdk.mjs", command: [process.execPath, "examples/openai-sdk.mjs"] },
  { file: "examples/curl.sh", command: ["sh", "examples/curl.sh"] },
];

/** What the built-in default's `demo` alias answers: 40 tokens of the simulator's text. */
const DEMO_TEXT = simulatedText(1, 40);

/** The text of an SSE stream of chat.completion.chunk events, and whether it ended with [DONE]. */
function sseText(body: string): { text: string; done: boolean } {
  const data = body
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice("data: ".length));
  const chunks = data.filter((d) => d !== "[DONE]").map((d) => JSON.parse(d) as { choices: Array<{ delta: { content?: string } }> });
  return { text: chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), done: data.at(-1) === "[DONE]" };
}

describe("the examples run as docs/clients.md says, against a started gateway", () => {
  let gateway: Started;
  let url: string;
  beforeAll(async () => {
    gateway = await startProcess(["dist/src/main.js"], (l) => l.event === "server.listening", { PATH: process.env.PATH ?? "", PORT: "0" });
    url = gateway.line.url as string;
  });
  afterAll(async () => {
    expect(await gateway.stop()).toBe(0);
  });

  it("examples/structured-output.ts prints an object that matches its schema", async () => {
    const { stdout } = await run(process.execPath, ["dist/examples/structured-output.js"], { env: { PATH: process.env.PATH ?? "", SLUICE_URL: url }, timeout: 60_000 });
    const parsed = JSON.parse(stdout) as { city: unknown; days: unknown };
    expect(typeof parsed.city).toBe("string");
    expect(Number.isInteger(parsed.days)).toBe(true);
  });

  for (const { file, command } of EXAMPLES) {
    it(`${file} streams the demo answer`, async () => {
      const { stdout } = await run(command[0]!, command.slice(1), { env: { PATH: process.env.PATH ?? "", SLUICE_URL: url }, timeout: 60_000 });
      if (file.endsWith(".sh")) {
        expect(sseText(stdout)).toEqual({ text: DEMO_TEXT, done: true });
      } else {
        expect(stdout).toBe(`${DEMO_TEXT}\n`);
      }
    });
  }
});

describe("docs/clients.md shows the examples as they are", () => {
  const readme = readFileSync("docs/clients.md", "utf8");
  for (const { file } of EXAMPLES) {
    it(`${file} appears in docs/clients.md verbatim, under its marker`, () => {
      const marker = `<!-- ${file} -->\n`;
      const at = readme.indexOf(marker);
      expect(at, `docs/clients.md lacks ${marker.trim()}`).toBeGreaterThanOrEqual(0);
      const rest = readme.slice(at + marker.length);
      expect(rest.startsWith("```")).toBe(true);
      const block = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(rest);
      expect(block?.[1]).toBe(readFileSync(file, "utf8"));
    });
  }
});
