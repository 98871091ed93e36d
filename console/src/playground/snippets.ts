import { toJsonString } from "@bufbuild/protobuf";
import { Role } from "../../../gen/sluice/v1/chat_pb.js";
import { type StreamChatRequest, StreamChatRequestSchema } from "../../../gen/sluice/v1/chat_service_pb.js";

/** A shell word in single quotes: the only character to escape is the quote itself. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

const ROLE_NAMES: Partial<Record<Role, string>> = { [Role.SYSTEM]: "system", [Role.USER]: "user", [Role.ASSISTANT]: "assistant" };
const ROLE_ENUMS: Partial<Record<Role, string>> = { [Role.SYSTEM]: "Role.SYSTEM", [Role.USER]: "Role.USER", [Role.ASSISTANT]: "Role.ASSISTANT" };

function textOf(message: StreamChatRequest["messages"][number]): string {
  return message.content.map((part) => (part.part.case === "text" ? part.part.value : "")).join("");
}

export interface Snippets {
  readonly bufCurl: string;
  readonly typescript: string;
  readonly curl: string;
}

/**
 * The request the playground sent, as three things a caller can run: `buf
 * curl` on the Connect protocol, a TypeScript client with the generated
 * code, and curl on the OpenAI-compatible facade. A key, when one is in
 * use, appears as a variable, never as its value.
 */
export function snippetsFor(request: StreamChatRequest, origin: string, withKey: boolean): Snippets {
  const json = toJsonString(StreamChatRequestSchema, request);
  const auth = withKey ? ` \\\n  -H "authorization: Bearer $SLUICE_API_KEY"` : "";
  const bufCurl = `npx @bufbuild/buf curl --protocol connect${auth} \\\n  --data ${shellQuote(json)} \\\n  ${origin}/sluice.v1.ChatService/StreamChat`;

  const messages = request.messages.map((m) => `    { role: ${ROLE_ENUMS[m.role] ?? "Role.USER"}, content: [{ part: { case: "text", value: ${JSON.stringify(textOf(m))} } }] },`).join("\n");
  const maxTokens = request.sampling?.maxTokens;
  const typescript = [
    `import { create } from "@bufbuild/protobuf";`,
    `import { createClient } from "@connectrpc/connect";`,
    `import { createConnectTransport } from "@connectrpc/connect-node";`,
    `import { Role } from "./gen/sluice/v1/chat_pb.js";`,
    `import { ChatService, StreamChatRequestSchema } from "./gen/sluice/v1/chat_service_pb.js";`,
    ``,
    `const transport = createConnectTransport({ baseUrl: ${JSON.stringify(origin)}, httpVersion: "1.1" });`,
    `const client = createClient(ChatService, transport);`,
    `const request = create(StreamChatRequestSchema, {`,
    `  model: ${JSON.stringify(request.model)},`,
    `  messages: [`,
    messages,
    `  ],`,
    ...(maxTokens === undefined ? [] : [`  sampling: { maxTokens: ${maxTokens} },`]),
    `});`,
    withKey ? `const headers = { authorization: \`Bearer \${process.env.SLUICE_API_KEY}\` };` : `const headers = {};`,
    `for await (const message of client.streamChat(request, { headers })) {`,
    `  if (message.delta.case === "text") process.stdout.write(message.delta.value.text);`,
    `}`,
  ].join("\n");

  const openAi = {
    model: request.model,
    stream: true,
    stream_options: { include_usage: true },
    messages: request.messages.map((m) => ({ role: ROLE_NAMES[m.role] ?? "user", content: textOf(m) })),
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  };
  const curl = `curl --no-buffer ${origin}/v1/chat/completions \\\n  -H 'content-type: application/json'${auth} \\\n  -d ${shellQuote(JSON.stringify(openAi))}`;
  return { bufCurl, typescript, curl };
}
