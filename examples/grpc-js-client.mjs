// Streams one answer over gRPC with @grpc/grpc-js, loading the contract from proto/ at run time.
// Run: node examples/grpc-js-client.mjs
// Another gateway: SLUICE_URL=https://sluice.internal:8443 node examples/grpc-js-client.mjs
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const url = new URL(process.env.SLUICE_URL ?? "http://127.0.0.1:8080");
const definition = protoLoader.loadSync("sluice/v1/chat_service.proto", {
  includeDirs: [new URL("../proto", import.meta.url).pathname],
  oneofs: true, // each message says which delta it carries: message.delta === "text"
  longs: String,
});
const { sluice } = grpc.loadPackageDefinition(definition);
const credentials = url.protocol === "https:" ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
const client = new sluice.v1.ChatService(url.host, credentials);

const call = client.streamChat({ model: "demo", messages: [{ role: "ROLE_USER", content: [{ text: "Hello" }] }] }, { deadline: Date.now() + 30_000 });
call.on("data", (message) => {
  if (message.delta === "text") process.stdout.write(message.text.text);
  if (message.delta === "finish") process.stdout.write("\n");
});
call.on("error", (error) => {
  // A stream that ends with an error status is a truncated answer.
  process.stderr.write(`${grpc.status[error.code]}: ${error.details}\n`);
  process.exitCode = 1;
});
call.on("close", () => client.close());
