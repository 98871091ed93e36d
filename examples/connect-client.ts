// Streams one answer over gRPC with connect-es and the generated code in gen/.
// Run: npm run build && node dist/examples/connect-client.js
// Another gateway: SLUICE_URL=https://sluice.internal:8443 node dist/examples/connect-client.js
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";

const client = createClient(ChatService, createGrpcTransport({ baseUrl: process.env.SLUICE_URL ?? "http://127.0.0.1:8080" }));
const request = create(StreamChatRequestSchema, {
  model: "demo",
  messages: [{ role: Role.USER, content: [{ part: { case: "text", value: "Hello" } }] }],
});
// A stream that ends without `finish` throws: what arrived is a truncated answer.
for await (const message of client.streamChat(request, { timeoutMs: 30_000 })) {
  if (message.delta.case === "text") process.stdout.write(message.delta.value.text);
  if (message.delta.case === "finish") process.stdout.write("\n");
}
