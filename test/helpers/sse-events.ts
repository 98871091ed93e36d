import { request } from "undici";

/** One SSE event of a facade stream, as a client sees it. */
export interface FacadeEvent {
  readonly id?: string;
  readonly data: string;
}

/** The text content of `data: {…}` chunk events. */
export function contentOfEvents(events: readonly FacadeEvent[]): string {
  return events
    .filter((e) => e.data.startsWith("{"))
    .map((e) => (JSON.parse(e.data) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
    .join("");
}

/**
 * Reads a facade SSE response event by event (comments skipped) until the
 * body ends or `stop` says so (then the connection is dropped).
 */
export async function readFacadeEvents(
  url: string,
  init: { method: "GET" | "POST"; headers?: Record<string, string>; body?: string },
  stop: (events: readonly FacadeEvent[]) => boolean = () => false,
): Promise<{ status: number; events: FacadeEvent[]; body: string }> {
  const abort = new AbortController();
  const res = await request(url, { ...init, signal: abort.signal });
  const events: FacadeEvent[] = [];
  let text = "";
  try {
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      let end: number;
      while ((end = text.indexOf("\n\n")) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) id = line.slice(4);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (data.length > 0) events.push({ ...(id === undefined ? {} : { id }), data: data.join("\n") });
        if (stop(events)) {
          abort.abort();
          return { status: res.statusCode, events, body: text };
        }
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  }
  return { status: res.statusCode, events, body: text };
}
