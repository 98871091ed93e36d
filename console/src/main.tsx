import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { BatchesView } from "./batches/batches-view.js";
import { KeyForm } from "./key-form.js";
import { LiveView } from "./live/live-view.js";
import { McpView } from "./mcp/mcp-view.js";
import { Playground } from "./playground/playground.js";
import { setKey } from "./session.js";
import { SpendView } from "./spend/spend-view.js";
import { BusinessLinesView } from "./tenancy/business-lines-view.js";
import { KeysView } from "./tenancy/keys-view.js";
import { TeamsView } from "./tenancy/teams-view.js";
import { useStats } from "./use-stats.js";

type Tab = "live" | "spend" | "batches" | "mcp" | "keys" | "teams" | "business-lines" | "playground";

const TABS: readonly Tab[] = ["spend", "batches", "mcp", "keys", "teams", "business-lines", "playground"];
const tabOf = (hash: string): Tab => TABS.find((tab) => hash === `#${tab}`) ?? "live";

/**
 * The console: a live view of this gateway, its spend from the ledger, its
 * keys, teams and business lines, and a playground to try its aliases. Both talk to the gateway with the generated Connect client; the
 * live view is one WatchStats stream. When the gateway wants the admin key,
 * the whole page waits for it.
 */
function App() {
  const [tab, setTab] = useState<Tab>(tabOf(window.location.hash));
  const [attempt, setAttempt] = useState(0);
  const feed = useStats(attempt);
  useEffect(() => {
    const onHash = () => setTab(tabOf(window.location.hash));
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  const locked = feed.status === "locked" || feed.status === "refused";
  return (
    <>
      <header>
        <h1>Sluice</h1>
        <nav>
          <a href="#live" class={tab === "live" ? "active" : ""}>
            Live
          </a>
          <a href="#spend" class={tab === "spend" ? "active" : ""}>
            Spend
          </a>
          <a href="#batches" class={tab === "batches" ? "active" : ""}>
            Batches
          </a>
          <a href="#mcp" class={tab === "mcp" ? "active" : ""}>
            MCP
          </a>
          <a href="#keys" class={tab === "keys" ? "active" : ""}>
            Keys
          </a>
          <a href="#teams" class={tab === "teams" ? "active" : ""}>
            Teams
          </a>
          <a href="#business-lines" class={tab === "business-lines" ? "active" : ""}>
            Business lines
          </a>
          <a href="#playground" class={tab === "playground" ? "active" : ""}>
            Playground
          </a>
        </nav>
        <span class={`feed ${feed.status}`} data-testid="feed-status">
          {feed.status === "retrying" ? `reconnecting (${feed.problem ?? "error"})` : feed.status}
        </span>
      </header>
      <main>
        {locked ? (
          <KeyForm
            refused={feed.status === "refused"}
            onKey={(key) => {
              setKey("admin", key);
              setAttempt((n) => n + 1);
            }}
          />
        ) : tab === "live" ? (
          <LiveView feed={feed} />
        ) : feed.status === "connecting" ? (
          // Until the feed answers, whether the page needs the admin key is unknown: no call goes out without it.
          <p class="muted">Connecting to the gateway…</p>
        ) : tab === "spend" ? (
          <SpendView />
        ) : tab === "batches" ? (
          <BatchesView />
        ) : tab === "mcp" ? (
          <McpView />
        ) : tab === "keys" ? (
          <KeysView />
        ) : tab === "teams" ? (
          <TeamsView />
        ) : tab === "business-lines" ? (
          <BusinessLinesView />
        ) : (
          <Playground />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
