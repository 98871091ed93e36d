import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamChatRequestSchema, StreamChatResponseSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { grpcFrame, type H2Response, h2request } from "./helpers/raw.js";

// Server-streaming methods over binary gRPC skip connect's generic handler
// (src/edges/grpc/lean-grpc-stream.ts). Whatever a client sends, the answer must
// be the one connect's handler gives: the same bytes go to the same method
// over gRPC-Web, which connect still serves, and the statuses must agree.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1?tokens=3" } });
});
afterAll(async () => {
  await h.close();
});

const PATH = "/sluice.v1.ChatService/StreamChat";

/** The gRPC status of a gRPC response: trailers, or headers for a trailers-only answer. */
function grpcStatus(res: H2Response): string | undefined {
  return (res.trailers["grpc-status"] ?? res.headers["grpc-status"]) as string | undefined;
}

/** The gRPC status of a gRPC-Web response: headers (trailers-only) or the trailer frame at the end of the body. */
function grpcWebStatus(res: H2Response): string | undefined {
  if (res.headers["grpc-status"] !== undefined) return res.headers["grpc-status"] as string;
  for (let at = 0; at + 5 <= res.body.length; ) {
    const length = res.body.readUInt32BE(at + 1);
    if ((res.body[at]! & 0x80) !== 0) return /grpc-status:\s*(\d+)/i.exec(res.body.subarray(at + 5, at + 5 + length).toString())?.[1];
    at += 5 + length;
  }
  return undefined;
}

function messagesOf(body: Buffer): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    if ((body[at]! & 0x80) === 0) out.push(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return out;
}

async function both(body: Buffer, headers: Record<string, string> = {}) {
  const grpc = await h2request(h.url, { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", ...headers }, body);
  const web = await h2request(h.url, { ":method": "POST", ":path": PATH, "content-type": "application/grpc-web+proto", ...headers }, body);
  return { grpc, web };
}

const valid = Buffer.from(toBinary(StreamChatRequestSchema, create(StreamChatRequestSchema, userRequest("sim", "hi"))));

describe("the lean gRPC path answers as connect's handler does", () => {
  const cases: Array<[string, Buffer, Record<string, string>?]> = [
    ["an empty body", Buffer.alloc(0)],
    ["three bytes, not an envelope", Buffer.from([0, 0, 0])],
    ["an envelope promising more than it carries", Buffer.concat([Buffer.from([0, 0, 0, 0, 100]), Buffer.alloc(10)])],
    ["bytes that are not the request message", grpcFrame(Buffer.from([0xff, 0xff, 0xff, 0xff]))],
    ["two messages for a method that takes one", Buffer.concat([grpcFrame(valid), grpcFrame(valid)])],
    ["a compressed message without grpc-encoding", grpcFrame(gzipSync(valid), true)],
    ["a malformed grpc-timeout", grpcFrame(valid), { "grpc-timeout": "soon" }],
    ["a compression connect does not accept", grpcFrame(valid, true), { "grpc-encoding": "br" }],
    ["an unknown model", grpcFrame(Buffer.from(toBinary(StreamChatRequestSchema, create(StreamChatRequestSchema, userRequest("nope", "hi")))))],
  ];
  for (const [name, body, headers] of cases) {
    it(name, async () => {
      const { grpc, web } = await both(body, headers);
      expect(grpc.headers[":status"]).toBe(200);
      expect(grpcStatus(grpc)).toBeDefined();
      expect(grpcStatus(grpc)).not.toBe("0");
      expect(grpcStatus(grpc)).toBe(grpcWebStatus(web));
    });
  }

  it("a gzip-compressed request streams the same messages as an uncompressed one", async () => {
    const plain = await h2request(h.url, { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers" }, grpcFrame(valid));
    const gzipped = await h2request(h.url, { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", "grpc-encoding": "gzip" }, grpcFrame(gzipSync(valid), true));
    const text = (res: H2Response) =>
      messagesOf(res.body)
        .map((m) => fromBinary(StreamChatResponseSchema, m))
        .map((m) => (m.delta.case === "text" ? m.delta.value.text : ""))
        .join("");
    expect(grpcStatus(plain)).toBe("0");
    expect(grpcStatus(gzipped)).toBe("0");
    expect(text(plain).length).toBeGreaterThan(0);
    expect(text(gzipped)).toBe(text(plain));
    expect(plain.headers["content-type"]).toBe("application/grpc+proto");
  });
});
