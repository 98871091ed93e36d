/**
 * The architecture in its written form, checked in CI (`npm run check`).
 * A request walks down: the port (server/) hands it to a route (routes.ts),
 * an edge (edges/) decodes it, the call layer (call/) runs its life, the
 * pipeline (pipeline/ → resilience/ → attempt/ → providers/ → sse/,
 * upstream/) serves it. Nothing on that path imports back up, type-only
 * imports included. Beside the path, the rooms the pipeline consults
 * (features and their bookkeeping) stand on config/, logging/ and core/
 * and never reach into the path. No cycles, between files or between
 * rooms (folders).
 */
const below = (...folders) => `^src/(${folders.join("|")})/`;
const COMPOSITION = "^src/(app|main|routes)\\.ts$";
const PIPELINE_AND_BELOW = below(
  "pipeline", "resilience", "attempt", "providers", "sse", "upstream", "admission", "routing",
  "usage", "tenancy", "store", "resume", "telemetry", "stats", "flow", "health", "config",
  "logging", "http", "core", "cache", "db", "audit", "drain", "recording", "compliance", "workers", "mcp", "provider-keys",
);
/** What carries a call once the call layer hands it down; the rooms beside it are consulted, never carriers. */
const CARRIERS = below("pipeline", "resilience", "attempt", "providers", "sse", "upstream");

module.exports = {
  forbidden: [
    { name: "no-cycles", severity: "error", comment: "No import cycles, type-only ones included.", from: {}, to: { circular: true } },
    {
      name: "no-folder-cycles",
      severity: "error",
      comment: "No cycles between rooms either: if a imports b, nothing in b reaches back into a.",
      from: {},
      to: { circular: true },
      scope: "folder",
    },
    {
      name: "nothing-imports-composition",
      severity: "error",
      comment: "app.ts, main.ts and routes.ts compose the rooms; no room knows them.",
      from: { path: "^src/", pathNot: COMPOSITION + "|^src/cli/" },
      to: { path: COMPOSITION },
    },
    {
      name: "port-knows-no-edge",
      severity: "error",
      comment: "The port (server/) listens and guards; routes.ts gives it the routes. It knows no edge, call or pipeline.",
      from: { path: below("server") },
      to: { path: below("edges", "call", "pipeline", "resilience", "attempt", "providers", "console") },
    },
    {
      name: "edges-go-through-the-call-layer",
      severity: "error",
      comment: "Edges are codecs over the call layer: they never reach into the pipeline or the port.",
      from: { path: below("edges") },
      to: { path: below("server", "pipeline", "resilience", "attempt", "providers", "upstream", "sse", "admission", "routing") },
    },
    {
      name: "edges-are-independent",
      severity: "error",
      comment: "One edge never imports another (shared SSE writing lives in edges/sse/).",
      from: { path: "^src/edges/([^/]+)/" },
      to: { path: "^src/edges/", pathNot: ["^src/edges/$1/", "^src/edges/sse/", "^src/edges/openai/http-errors\\.ts$"] },
    },
    {
      name: "openai-error-body-is-openais",
      severity: "error",
      comment: "The one exception above: OpenAI's Responses API answers errors in Chat Completions' body, so only the Responses edge reads that mapping.",
      from: { path: "^src/edges/", pathNot: "^src/edges/(openai|responses)/" },
      to: { path: "^src/edges/openai/http-errors\\.ts$" },
    },
    {
      name: "call-layer-knows-no-wire",
      severity: "error",
      comment: "The call layer is edge-neutral.",
      from: { path: below("call") },
      to: { path: below("edges", "server", "console") },
    },
    {
      name: "pipeline-and-below-look-down",
      severity: "error",
      comment: "The pipeline and what it stands on never import an edge, the call layer, the port or the console.",
      from: { path: PIPELINE_AND_BELOW },
      to: { path: below("edges", "call", "server", "console") },
    },
    {
      name: "core-stands-alone",
      severity: "error",
      comment: "core/ is the shared vocabulary (requests, deltas, errors): it imports no other room.",
      from: { path: below("core") },
      to: { path: "^src/", pathNot: below("core") },
    },
    {
      name: "foundation-stands-on-core",
      severity: "error",
      comment: "config/ (the settings) and logging/ (the logger) are handed to every room, so they import only core/ (config also names the logger's type): any room may stand on them.",
      from: { path: below("config", "logging") },
      to: { path: "^src/", pathNot: below("core", "config", "logging") },
    },
    {
      name: "only-the-call-layer-enters-the-path",
      severity: "error",
      comment: "The pipeline's chain (pipeline → resilience → attempt → providers → sse, upstream) is entered by the call layer alone (and composed by app.ts): the rooms beside it (tenancy, cache, compliance, usage, telemetry…) are consulted by the pipeline and never know how a call is carried.",
      from: { path: "^src/", pathNot: [CARRIERS, below("call"), COMPOSITION] },
      to: { path: CARRIERS },
    },
    {
      name: "stages-consult-features-only",
      severity: "error",
      comment: "A stage (pipeline/stages/) is a feature joining the call: it consults the feature rooms and the stage contract, never the carriers (attempts, providers, the wire) or another stage; the table (stages/index.ts) alone knows them all.",
      from: { path: "^src/pipeline/stages/", pathNot: "^src/pipeline/stages/index\\.ts$" },
      to: {
        path: "^src/",
        pathNot: [
          below("core", "config", "compliance", "cache", "recording", "routing", "tenancy", "telemetry", "usage", "logging", "flow"),
          "^src/pipeline/(stage|stream-context|stream-cut|stream-registry|output-guard)\\.ts$",
        ],
      },
    },
    {
      name: "openapi-only-describes",
      severity: "error",
      comment: "openapi/ describes the port (the edges' body schemas and field tables, the proto descriptors); it serves no call, so it never reaches the call layer, the pipeline or the port.",
      from: { path: below("openapi") },
      to: { path: below("call", "pipeline", "resilience", "attempt", "providers", "upstream", "server", "tenancy", "store") },
    },
    {
      name: "simulator-stands-alone",
      severity: "error",
      comment: "The simulator plays the providers; it shares no gateway code, so it cannot agree with a bug.",
      from: { path: below("simulator") },
      to: { path: "^src/", pathNot: below("simulator") },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|dist|gen)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
