// Streams one answer over gRPC with the generated client, printing text as it
// arrives. Run from a checkout on Node 20 (which cannot run TypeScript itself):
//   npm run build && node dist/examples/stream-chat.js [baseUrl] [model]
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";

const [baseUrl = "http://127.0.0.1:8080", model = "demo"] = process.argv.slice(2);
const client = createClient(ChatService, createGrpcTransport({ baseUrl }));
const request = create(StreamChatRequestSchema, {
  model,
  messages: [{ role: Role.USER, content: [{ part: { case: "text", value: "Hello" } }] }],
});
for await (const message of client.streamChat(request, { timeoutMs: 30_000 })) {
  if (message.delta.case === "text") process.stdout.write(message.delta.value.text);
  if (message.delta.case === "finish") process.stdout.write("\n");
}
