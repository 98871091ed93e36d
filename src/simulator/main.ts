import { parseArgs } from "node:util";
import { startSimulator } from "./server.js";

/** Standalone simulator: `npm run simulator -- --port 9000`. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: "string", default: "0" }, host: { type: "string", default: "127.0.0.1" } },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--port: not a port number: ${values.port}`);
  const sim = await startSimulator({ host: values.host, port });
  process.stdout.write(`${JSON.stringify({ msg: "simulator listening", origin: sim.origin, openAiBaseUrl: sim.openAiBaseUrl })}\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`simulator: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
