import { connect as http2Connect, constants as http2Constants } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Agent, request } from "undici";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService, StreamChatRequestSchema, type StreamChatResponse, StreamChatResponseSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { createSseDecoder } from "../src/sse/decoder.js";
import { epochMs } from "./stats.js";

/** Where a benchmark stream goes. */
export type TargetKind = "direct" | "sluice-grpc" | "sluice-grpc-connect" | "sluice-sse" | "peer-sse" | "floor-sse" | "floor-grpc" | "direct-embed";

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
  /** Sluice's `sluice-overhead-ms` response header, when the path is Sluice's (its own account of its time to the first byte). */
  readonly overheadMs?: number;
}

/** The `sluice-overhead-ms` header as a number, when there is one. */
function overheadOf(value: string | string[] | undefined): { overheadMs?: number } {
  return typeof value === "string" ? { overheadMs: Number(value) } : {};
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
      return { textDeltas, textChars, finished, ...overheadOf(res.headers["sluice-overhead-ms"]) };
    },
    cancelSent: sentAtAbort,
    close: () => dispatcher.close(),
  };
}

/**
 * What a gRPC stream delivered, counted the same way whichever client read it.
 * `raw`: the gRPC floor's messages (bench/floor-grpc.ts), each the raw `data`
 * of an upstream chat event, read as the SSE client reads it (the content
 * delta's text, `[DONE]` the end), so that its deltas and characters count
 * as every other path's do.
 */
function createTally(onText: OnText, raw = false) {
  let textDeltas = 0;
  let textChars = 0;
  let finished = false;
  let provider: string | undefined;
  return {
    async message(m: StreamChatResponse) {
      if (m.delta.case === "text" && raw) {
        if (m.delta.value.text === "[DONE]") finished = true;
        else {
          const content = (JSON.parse(m.delta.value.text) as Chunk).choices?.[0]?.delta?.content;
          if (content) {
            textDeltas++;
            textChars += content.length;
            await onText(content.length);
          }
        }
      } else if (m.delta.case === "text") {
        textDeltas++;
        textChars += m.delta.value.text.length;
        await onText(m.delta.value.text.length);
      } else if (m.delta.case === "start") provider = m.delta.value.provider;
      else if (m.delta.case === "finish") finished = true;
    },
    result: (): StreamResult => ({ textDeltas, textChars, finished, ...(provider ? { provider } : {}) }),
  };
}

/**
 * Sluice's gRPC edge through node:http2 and protobuf-es: envelopes split and
 * decoded as they arrive, the stream paused while `onText` waits. The load
 * generator shares two cores with the gateway, and connect-node's client
 * costs about three times the CPU per stream of undici with an SSE decoder
 * (the direct and SSE paths' client), which on this machine showed up as
 * gateway latency; this client does the work the SSE client does, for gRPC.
 * connect-node's own client stays measured beside it (`sluice-grpc-connect`),
 * and the test suite checks compatibility with connect, grpc-js and buf curl.
 * The gRPC floor (`floor-grpc`) is read by this same client.
 */
function grpcHttp2Target(spec: TargetSpec): Target {
  const sessions = Array.from({ length: Math.max(1, spec.connections ?? 1) }, () => http2Connect(spec.url));
  for (const session of sessions) session.on("error", () => undefined);
  let next = 0;
  return {
    async stream(prompt, signal, onText) {
      const session = sessions[next++ % sessions.length]!;
      const message = toBinary(StreamChatRequestSchema, create(StreamChatRequestSchema, { model: spec.model, messages: [{ role: Role.USER, content: [{ part: { case: "text", value: prompt } }] }] }));
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      const req = session.request({
        ":method": "POST",
        ":path": "/sluice.v1.ChatService/StreamChat",
        "content-type": "application/grpc",
        te: "trailers",
        ...(spec.apiKey ? { authorization: `Bearer ${spec.apiKey}` } : {}),
      });
      const cancel = () => req.close(http2Constants.NGHTTP2_CANCEL);
      signal.addEventListener("abort", cancel, { once: true });
      let status: string | undefined;
      let overhead: string | string[] | undefined;
      req.on("response", (headers) => {
        status = headers["grpc-status"] as string | undefined;
        overhead = headers["sluice-overhead-ms"];
      });
      req.on("trailers", (trailers) => (status = trailers["grpc-status"] as string | undefined));
      req.end(frame);
      const tally = createTally(onText, spec.kind === "floor-grpc");
      let pending: Buffer = Buffer.alloc(0);
      try {
        for await (const chunk of req as AsyncIterable<Buffer>) {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
            const end = 5 + pending.readUInt32BE(1);
            const m = fromBinary(StreamChatResponseSchema, pending.subarray(5, end));
            pending = pending.subarray(end);
            await tally.message(m);
          }
        }
      } finally {
        signal.removeEventListener("abort", cancel);
      }
      signal.throwIfAborted();
      if (status !== "0") throw new Error(`grpc-status ${status ?? "missing"}`);
      return { ...tally.result(), ...overheadOf(overhead) };
    },
    cancelSent: sentAtCheckPhase,
    close: async () => {
      for (const session of sessions) session.close();
    },
  };
}

/** Sluice's gRPC edge through connect-node, over one HTTP/2 connection unless `connections` asks for more. */
function grpcConnectTarget(spec: TargetSpec): Target {
  const clients = Array.from({ length: Math.max(1, spec.connections ?? 1) }, () => createClient(ChatService, createGrpcTransport({ baseUrl: spec.url })));
  let next = 0;
  return {
    async stream(prompt, signal, onText) {
      const client = clients[next++ % clients.length]!;
      const tally = createTally(onText);
      const request = { model: spec.model, messages: [{ role: Role.USER, content: [{ part: { case: "text" as const, value: prompt } }] }] };
      for await (const m of client.streamChat(request, { signal, ...(spec.apiKey ? { headers: { authorization: `Bearer ${spec.apiKey}` } } : {}) })) await tally.message(m);
      return tally.result();
    },
    cancelSent: sentAtCheckPhase,
    close: async () => undefined,
  };
}

/**
 * One OpenAI-compatible `POST /embeddings` of the prompt, its response read
 * whole: "first text" is the vector's arrival. What the semantic cache's
 * embedding call costs the gateway upstream, timed by the same loop as the
 * streams it is compared with.
 */
function embedTarget(spec: TargetSpec): Target {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1 });
  return {
    async stream(prompt, signal, onText) {
      const res = await request(`${spec.url}/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: spec.model, input: prompt, encoding_format: "float" }),
        signal,
        dispatcher,
      });
      const body = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`embeddings: HTTP ${res.statusCode}`);
      await onText(body.length);
      return { textDeltas: 1, textChars: body.length, finished: true };
    },
    cancelSent: sentAtAbort,
    close: () => dispatcher.close(),
  };
}

export function createTarget(spec: TargetSpec): Target {
  if (spec.kind === "direct-embed") return embedTarget(spec);
  if (spec.kind === "sluice-grpc" || spec.kind === "floor-grpc") return grpcHttp2Target(spec);
  if (spec.kind === "sluice-grpc-connect") return grpcConnectTarget(spec);
  return sseTarget(spec);
}
