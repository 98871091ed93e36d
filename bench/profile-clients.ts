import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Agent, request } from "undici";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { createSseDecoder, type SseEvent } from "../src/sse/decoder.js";

/**
 * The paths of the public streaming profile: the simulator direct, both
 * floors, and each of the gateway's streaming edges in its own wire.
 */
export type ProfilePath = "direct" | "floor-sse" | "floor-grpc" | "sluice-chat" | "sluice-messages" | "sluice-responses" | "sluice-grpc";

export const PROFILE_PATHS: readonly ProfilePath[] = ["direct", "floor-sse", "floor-grpc", "sluice-chat", "sluice-messages", "sluice-responses", "sluice-grpc"];

/** Which floor a path is held against: SSE edges the HTTP floor, the gRPC edge the gRPC floor. */
export const FLOOR_OF: Readonly<Record<ProfilePath, ProfilePath | undefined>> = {
  direct: undefined,
  "floor-sse": undefined,
  "floor-grpc": undefined,
  "sluice-chat": "floor-sse",
  "sluice-messages": "floor-sse",
  "sluice-responses": "floor-sse",
  "sluice-grpc": "floor-grpc",
};

export interface ProfileTarget {
  readonly path: ProfilePath;
  /** The OpenAI base URL (direct, floor-sse), the gateway's `/v1` (SSE edges), or an HTTP/2 origin (gRPC). */
  readonly url: string;
  readonly model: string;
  /** gRPC: HTTP/2 connections to spread streams over (the servers allow 1,000 streams each). */
  readonly connections?: number;
}

/** One stream: `onText` with each content delta's length as it is read; resolves whether the stream ended complete. */
export interface ProfileClient {
  stream(prompt: string, onText: (length: number) => void): Promise<boolean>;
  close(): Promise<void>;
}

type Wire = "chat" | "messages" | "responses";
/** Not a text any wire carries: the end of a stream. */
const END = "\u0000end";

function requestOf(wire: Wire, model: string, prompt: string): { path: string; body: unknown; headers: Record<string, string> } {
  switch (wire) {
    case "chat":
      return { path: "/chat/completions", body: { model, stream: true, messages: [{ role: "user", content: prompt }] }, headers: { authorization: "Bearer bench" } };
    case "messages":
      return { path: "/messages", body: { model, stream: true, max_tokens: 1024, messages: [{ role: "user", content: prompt }] }, headers: { "x-api-key": "bench", "anthropic-version": "2023-06-01" } };
    case "responses":
      return { path: "/responses", body: { model, stream: true, store: false, input: prompt }, headers: { authorization: "Bearer bench" } };
  }
}

/** The content text an event carries (undefined: none), or "end" for the event that ends the stream, in each wire's own terms. */
function readEvent(wire: Wire, e: SseEvent): string | undefined {
  switch (wire) {
    case "chat":
      if (e.data === "[DONE]") return END;
      return (JSON.parse(e.data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content || undefined;
    case "messages":
      if (e.event === "message_stop") return END;
      return e.event === "content_block_delta" ? (JSON.parse(e.data) as { delta?: { type?: string; text?: string } }).delta?.text : undefined;
    case "responses":
      if (e.event === "response.completed") return END;
      return e.event === "response.output_text.delta" ? (JSON.parse(e.data) as { delta?: string }).delta : undefined;
  }
}

/** Any SSE edge over undici, one keep-alive pool, events split by Sluice's own decoder. */
function sseClient(target: ProfileTarget, wire: Wire): ProfileClient {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1, connections: null, headersTimeout: 600_000, bodyTimeout: 600_000 });
  return {
    async stream(prompt, onText) {
      const r = requestOf(wire, target.model, prompt);
      const res = await request(`${target.url}${r.path}`, { method: "POST", headers: { "content-type": "application/json", ...r.headers }, body: JSON.stringify(r.body), dispatcher });
      if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
      const decoder = createSseDecoder({ maxEventSize: 1 << 20 });
      let ended = false;
      for await (const bytes of res.body) {
        for (const event of decoder.push(bytes as Uint8Array)) {
          const text = readEvent(wire, event);
          if (text === END) ended = true;
          else if (text) onText(text.length);
        }
      }
      return ended;
    },
    close: () => dispatcher.close(),
  };
}

/**
 * connect-node's gRPC client over HTTP/2. From the gateway a `TextDelta` is
 * a content delta and `Finish` the end; from the gRPC floor every event is a
 * `TextDelta` of the upstream's raw data, read here as the chat wire reads it.
 */
function grpcClient(target: ProfileTarget): ProfileClient {
  const clients = Array.from({ length: Math.max(1, target.connections ?? 1) }, () => createClient(ChatService, createGrpcTransport({ baseUrl: target.url })));
  const raw = target.path === "floor-grpc";
  let next = 0;
  return {
    async stream(prompt, onText) {
      const client = clients[next++ % clients.length]!;
      let ended = false;
      const req = { model: target.model, messages: [{ role: Role.USER, content: [{ part: { case: "text" as const, value: prompt } }] }] };
      for await (const m of client.streamChat(req)) {
        if (m.delta.case === "finish") ended = true;
        if (m.delta.case !== "text") continue;
        const text = raw ? readEvent("chat", { event: undefined, data: m.delta.value.text }) : m.delta.value.text;
        if (text === END) ended = true;
        else if (text) onText(text.length);
      }
      return ended;
    },
    close: async () => undefined,
  };
}

export function createProfileClient(target: ProfileTarget): ProfileClient {
  switch (target.path) {
    case "floor-grpc":
    case "sluice-grpc":
      return grpcClient(target);
    case "sluice-messages":
      return sseClient(target, "messages");
    case "sluice-responses":
      return sseClient(target, "responses");
    default:
      return sseClient(target, "chat");
  }
}
