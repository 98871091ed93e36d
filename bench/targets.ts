import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Agent, request } from "undici";
import { createSseDecoder } from "../src/sse/decoder.js";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { epochMs } from "./stats.js";

/** Where a benchmark stream goes. */
export type TargetKind = "direct" | "sluice-grpc" | "sluice-sse" | "peer-sse";

export interface TargetSpec {
  readonly kind: TargetKind;
  /** Base URL of the OpenAI-compatible API (direct, Sluice facade, peer) or the gateway URL (gRPC). */
  readonly url: string;
  readonly model: string;
  /** For the peer: the simulator's OpenAI base URL it must forward to. */
  readonly upstream?: string;
  /** gRPC only: spread streams over this many HTTP/2 connections (the gateway allows 1 000 streams per connection). */
  readonly connections?: number;
  /** A virtual key for a gateway that requires one (sent as `authorization: Bearer`). */
  readonly apiKey?: string;
}

export interface StreamResult {
  /** Text messages received (the gRPC edge may merge several upstream deltas into one). */
  readonly textDeltas: number;
  /** Characters of text received: the same for every path that delivered the whole answer. */
  readonly textChars: number;
  readonly finished: boolean;
  /** The provider that served, from `start` (gRPC only). */
  readonly provider?: string;
}

/** Called for each text delta; may wait (a slow reader) before the next is read. */
export type OnText = (bytes: number) => void | Promise<void>;

export interface Target {
  stream(prompt: string, signal: AbortSignal, onText: OnText): Promise<StreamResult>;
  /**
   * Epoch ms when a cancel made just now (the stream's signal aborted) has
   * left this process. The cancel benchmark measures the upstream close
   * from there: the time a busy load generator takes to flush it is its
   * own, not the path's.
   */
  cancelSent(): Promise<number>;
  close(): Promise<void>;
}

/** undici destroys the socket inside abort(): the FIN is on the wire when abort() returns. */
const sentAtAbort = () => Promise.resolve(epochMs());

/**
 * Node's HTTP/2 session writes a RST_STREAM frame from a native immediate,
 * in the check phase of the loop iteration that aborted the stream; native
 * immediates run before JavaScript ones, so this is at or after the write.
 */
const sentAtCheckPhase = () => new Promise<number>((resolve) => setImmediate(() => resolve(epochMs())));

interface Chunk {
  choices?: Array<{ delta?: { content?: string } }>;
}

/** OpenAI-compatible SSE over undici, parsed with Sluice's own decoder, identical for every SSE target. */
function sseTarget(spec: TargetSpec): Target {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${spec.apiKey ?? "bench"}` };
  if (spec.kind === "peer-sse") {
    headers["x-portkey-provider"] = "openai";
    headers["x-portkey-custom-host"] = spec.upstream!;
  }
  return {
    async stream(prompt, signal, onText) {
      const res = await request(`${spec.url}/chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: spec.model, stream: true, messages: [{ role: "user", content: prompt }] }),
        signal,
        dispatcher,
      });
      if (res.statusCode !== 200) {
        const text = await res.body.text();
        throw new Error(`status ${res.statusCode}: ${text.slice(0, 200)}`);
      }
      const decoder = createSseDecoder({ maxEventSize: 1 << 24 });
      let textDeltas = 0;
      let textChars = 0;
      let finished = false;
      for await (const bytes of res.body) {
        for (const event of decoder.push(bytes as Uint8Array)) {
          if (event.data === "[DONE]") {
            finished = true;
            continue;
          }
          const content = (JSON.parse(event.data) as Chunk).choices?.[0]?.delta?.content;
          if (content) {
            textDeltas++;
            textChars += content.length;
            await onText(content.length);
          }
        }
      }
      return { textDeltas, textChars, finished };
    },
    cancelSent: sentAtAbort,
    close: () => dispatcher.close(),
  };
}

/** Sluice's gRPC edge through connect-node, over one HTTP/2 connection unless `connections` asks for more. */
function grpcTarget(spec: TargetSpec): Target {
  const clients = Array.from({ length: Math.max(1, spec.connections ?? 1) }, () => createClient(ChatService, createGrpcTransport({ baseUrl: spec.url })));
  let next = 0;
  return {
    async stream(prompt, signal, onText) {
      const client = clients[next++ % clients.length]!;
      let textDeltas = 0;
      let textChars = 0;
      let finished = false;
      let provider: string | undefined;
      const request = { model: spec.model, messages: [{ role: Role.USER, content: [{ part: { case: "text" as const, value: prompt } }] }] };
      for await (const m of client.streamChat(request, { signal, ...(spec.apiKey ? { headers: { authorization: `Bearer ${spec.apiKey}` } } : {}) })) {
        if (m.delta.case === "text") {
          textDeltas++;
          textChars += m.delta.value.text.length;
          await onText(m.delta.value.text.length);
        } else if (m.delta.case === "start") provider = m.delta.value.provider;
        else if (m.delta.case === "finish") finished = true;
      }
      return { textDeltas, textChars, finished, ...(provider ? { provider } : {}) };
    },
    cancelSent: sentAtCheckPhase,
    close: async () => undefined,
  };
}

export function createTarget(spec: TargetSpec): Target {
  return spec.kind === "sluice-grpc" ? grpcTarget(spec) : sseTarget(spec);
}
