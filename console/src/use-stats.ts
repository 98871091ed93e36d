import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import type { WatchStatsResponse } from "../../gen/sluice/admin/v1/stats_pb.js";
import { admin } from "./api.js";
import { getKey, setKey } from "./session.js";

/** Where the live feed stands: `locked` asks for the admin key, `refused` after a wrong one. */
export type FeedStatus = "connecting" | "live" | "locked" | "refused" | "retrying";

export interface Feed {
  readonly status: FeedStatus;
  readonly snapshot?: WatchStatsResponse;
  /** Why the feed is retrying: the status code name, never a key. */
  readonly problem?: string;
}

/** Wait before reopening a feed that ended or failed (the gateway restarted, too many watchers). */
const RETRY_MS = 3_000;

/**
 * The WatchStats stream, opened once per `attempt` (a new key makes a new
 * attempt) and closed when the page goes. UNAUTHENTICATED locks the page;
 * with a key present it also forgets that key, which was refused.
 */
export function useStats(attempt: number): Feed {
  const [feed, setFeed] = useState<Feed>({ status: "connecting" });
  useEffect(() => {
    const controller = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const open = async () => {
      try {
        for await (const snapshot of admin.watchStats({}, { signal: controller.signal })) {
          setFeed({ status: "live", snapshot });
        }
        if (!controller.signal.aborted) throw new ConnectError("the feed ended", Code.Unavailable);
      } catch (error) {
        if (controller.signal.aborted) return;
        const code = ConnectError.from(error).code;
        if (code === Code.Unauthenticated || code === Code.PermissionDenied) {
          const hadKey = getKey("admin") !== undefined;
          setKey("admin", undefined);
          setFeed({ status: hadKey ? "refused" : "locked" });
          return;
        }
        setFeed((previous) => ({ ...previous, status: "retrying", problem: Code[code] }));
        retry = setTimeout(() => void open(), RETRY_MS);
      }
    };
    void open();
    return () => {
      controller.abort();
      if (retry) clearTimeout(retry);
    };
  }, [attempt]);
  return feed;
}
