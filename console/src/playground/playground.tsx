import { create } from "@bufbuild/protobuf";
import { useEffect, useRef, useState } from "preact/hooks";
import { Role } from "../../../gen/sluice/v1/chat_pb.js";
import { type Model, type StreamChatRequest, StreamChatRequestSchema } from "../../../gen/sluice/v1/chat_service_pb.js";
import { listModels } from "../api.js";
import { ms, rate } from "../format.js";
import { getKey, setKey } from "../session.js";
import { type RunState, runStream } from "./run-stream.js";
import { snippetsFor } from "./snippets.js";

interface Turn {
  role: Role;
  text: string;
}

const ROLES: ReadonlyArray<[Role, string]> = [
  [Role.SYSTEM, "system"],
  [Role.USER, "user"],
  [Role.ASSISTANT, "assistant"],
];

/** Longest message text the form sends; the gateway has its own limits, this keeps a paste from freezing the page. */
const MAX_TEXT = 100_000;

function buildRequest(model: string, turns: readonly Turn[], maxTokens: string): StreamChatRequest {
  const max = Number.parseInt(maxTokens, 10);
  return create(StreamChatRequestSchema, {
    model,
    messages: turns.filter((t) => t.text.trim() !== "").map((t) => ({ role: t.role, content: [{ part: { case: "text" as const, value: t.text.slice(0, MAX_TEXT) } }] })),
    ...(Number.isFinite(max) && max > 0 ? { sampling: { maxTokens: max } } : {}),
  });
}

/** Try an alias: write messages, stream the answer with every delta kind shown, stop it, and copy what was sent. */
export function Playground() {
  const [models, setModels] = useState<readonly Model[]>([]);
  const [modelsError, setModelsError] = useState<string>();
  const [model, setModel] = useState("");
  const [turns, setTurns] = useState<Turn[]>([{ role: Role.USER, text: "Hello" }]);
  const [maxTokens, setMaxTokens] = useState("");
  const [apiKey, setApiKey] = useState(getKey("api") ?? "");
  const [run, setRun] = useState<RunState>();
  const [sent, setSent] = useState<StreamChatRequest>();
  const controller = useRef<AbortController | undefined>(undefined);

  const loadModels = () => {
    listModels()
      .then((response) => {
        setModels(response.models);
        setModelsError(undefined);
        setModel((current) => (response.models.some((m) => m.id === current) ? current : ((response.models.find((m) => m.id === "demo") ?? response.models[0])?.id ?? "")));
      })
      .catch((error: unknown) => setModelsError(error instanceof Error ? error.message : String(error)));
  };
  useEffect(() => {
    loadModels();
    return () => controller.current?.abort();
  }, []);

  const start = () => {
    controller.current?.abort();
    const request = buildRequest(model, turns, maxTokens);
    setSent(request);
    const abort = new AbortController();
    controller.current = abort;
    void runStream(request, abort.signal, setRun);
  };
  const streaming = run?.status === "streaming";
  const snippets = sent ? snippetsFor(sent, window.location.origin, apiKey !== "") : undefined;

  return (
    <div class="playground">
      <form
        class="request"
        onSubmit={(event) => {
          event.preventDefault();
          start();
        }}
      >
        <div class="row">
          <label>
            Alias
            <select value={model} onChange={(e) => setModel(e.currentTarget.value)} data-testid="alias">
              {/* The alias alone: its first target need not be the one that serves (failover, routing); the run shows that one. */}
              {models.map((m) => (
                <option key={m.id} value={m.id} title={`first target: ${m.provider} / ${m.upstreamModel}`}>
                  {m.id}
                </option>
              ))}
            </select>
          </label>
          <label>
            Max tokens
            <input type="number" min="1" value={maxTokens} onInput={(e) => setMaxTokens(e.currentTarget.value)} placeholder="default" />
          </label>
          <label>
            API key (when the gateway requires one)
            <input
              type="password"
              autocomplete="off"
              value={apiKey}
              onInput={(e) => {
                setApiKey(e.currentTarget.value);
                setKey("api", e.currentTarget.value);
              }}
              // A key given or changed lists the aliases that key may use.
              onChange={loadModels}
              data-testid="api-key"
            />
          </label>
        </div>
        {modelsError && (
          <p class="error" data-testid="models-error">
            Could not list the aliases: {modelsError}{" "}
            <button type="button" onClick={loadModels}>
              Retry
            </button>
          </p>
        )}
        {turns.map((turn, i) => (
          <div class="turn" key={i}>
            <select value={turn.role} onChange={(e) => setTurns(turns.map((t, j) => (j === i ? { ...t, role: Number(e.currentTarget.value) as Role } : t)))}>
              {ROLES.map(([role, name]) => (
                <option key={role} value={role}>
                  {name}
                </option>
              ))}
            </select>
            <textarea rows={3} maxLength={MAX_TEXT} value={turn.text} onInput={(e) => setTurns(turns.map((t, j) => (j === i ? { ...t, text: e.currentTarget.value } : t)))} data-testid={`message-${i}`} />
            <button type="button" disabled={turns.length === 1} onClick={() => setTurns(turns.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <div class="row">
          <button type="button" onClick={() => setTurns([...turns, { role: Role.USER, text: "" }])}>
            Add message
          </button>
          <button type="submit" disabled={!model || streaming} data-testid="send">
            Send
          </button>
          <button type="button" disabled={!streaming} onClick={() => controller.current?.abort()} data-testid="stop">
            Stop
          </button>
        </div>
      </form>

      {run && (
        <section class="answer">
          <div class="facts">
            <span>
              status: <b data-testid="run-status">{run.status}</b>
            </span>
            <span>
              alias: <b data-testid="run-alias">{sent?.model ?? "–"}</b>
            </span>
            <span>
              target: <b data-testid="target">{run.target ?? "–"}</b>
            </span>
            <span>
              TTFT: <b data-testid="ttft">{ms(run.ttftMs)}</b>
            </span>
            <span>
              tokens/s: <b data-testid="tokens-per-second">{run.tokensPerSecond === undefined ? "–" : rate(run.tokensPerSecond)}</b>
            </span>
            {run.dropped && run.dropped.length > 0 && <span>dropped: {run.dropped.join(", ")}</span>}
          </div>
          {run.error && (
            <p class="error" data-testid="run-error">
              {run.error}
            </p>
          )}
          {run.reasoning && (
            <div>
              <h3>Reasoning</h3>
              <pre class="reasoning" data-testid="reasoning">
                {run.reasoning}
              </pre>
            </div>
          )}
          <h3>Text</h3>
          <pre class="text" data-testid="answer">
            {run.text}
          </pre>
          {run.toolCalls.length > 0 && (
            <div>
              <h3>Tool calls</h3>
              {run.toolCalls.map((c) => (
                <pre key={c.index} data-testid={`tool-call-${c.index}`}>
                  #{c.index} {c.name} {c.id && `(${c.id})`} {c.arguments}
                </pre>
              ))}
            </div>
          )}
          <div class="facts">
            <span>
              usage:{" "}
              <b data-testid="usage">
                {run.usage
                  ? `in ${run.usage.input}, out ${run.usage.output}${run.usage.cached ? `, cached ${run.usage.cached}` : ""}${run.usage.reasoning ? `, reasoning ${run.usage.reasoning}` : ""}${run.usage.estimated ? " (estimated)" : ""}`
                  : "–"}
              </b>
            </span>
            <span>
              finish: <b data-testid="finish">{run.finish ?? "–"}</b>
            </span>
          </div>
          <details>
            <summary>Deltas ({run.events.length})</summary>
            <ol class="events" data-testid="events">
              {run.events.map((e) => (
                <li key={e.seq}>
                  <span class={`kind ${e.kind}`}>{e.kind}</span> {e.detail}
                </li>
              ))}
            </ol>
          </details>
        </section>
      )}

      {snippets && (
        <section class="snippets">
          <h2>The same request elsewhere</h2>
          <h3>buf curl (Connect)</h3>
          <pre data-testid="snippet-buf-curl">{snippets.bufCurl}</pre>
          <h3>TypeScript (connect-es)</h3>
          <pre data-testid="snippet-typescript">{snippets.typescript}</pre>
          <h3>curl (OpenAI-compatible facade)</h3>
          <pre data-testid="snippet-curl">{snippets.curl}</pre>
        </section>
      )}
    </div>
  );
}
