import type { UpstreamResponse } from "./http-client.js";

const ERROR_BODY_LIMIT = 16 * 1024;

/** The start of a failed response's body (at most 16 KiB), for the adapter to read the provider's message from. */
export async function readErrorBody(body: UpstreamResponse["body"]): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= ERROR_BODY_LIMIT) break;
    }
  } catch {
    // A body that fails half-way still has a status worth reporting.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, ERROR_BODY_LIMIT);
}

export function isEventStream(headers: UpstreamResponse["headers"]): boolean {
  const type = headers["content-type"];
  return typeof type === "string" && type.toLowerCase().startsWith("text/event-stream");
}
