import { GatewayError } from "../core/errors.js";
import type { ConversationStore } from "./conversation-store.js";
import type { ResponseStore } from "./stored-response.js";

/** What one key keeps, as the admin sees it. */
export interface KeyStoredResponses {
  readonly keyId: string;
  /** The name of the key that has this id now; absent when none does (revoked, or removed from the configuration). */
  readonly keyName?: string;
  readonly count: number;
  readonly bytes: number;
}

/** AdminService's stored-response calls (ListStoredResponses, PurgeResponses). */
export interface ResponsesAdmin {
  list(keyId?: string): Promise<KeyStoredResponses[]>;
  /** Removes one key's responses and conversations, named by id or by the name a key bears now; throws `invalid_request` unless exactly one is given. */
  purge(who: { readonly keyId: string; readonly keyName: string }): Promise<{ readonly purged: number; readonly conversationsPurged: number; readonly keyIds: readonly string[] }>;
}

export interface ResponsesAdminOptions {
  readonly store: ResponseStore;
  /** A key's conversations go with its responses: both hold its items. */
  readonly conversations?: ConversationStore;
  /** The ids of the keys that bear `name` now (configured or runtime). */
  readonly keyIdsNamed: (name: string) => readonly string[];
  /** Every known key's name by its id. */
  readonly keyNames: () => Promise<ReadonlyMap<string, string>>;
}

/**
 * Ownership is by key id (StoredResponse.owner): a name is resolved to the
 * key that bears it now, so purging by name never reaches a revoked key's
 * responses kept under the same name (nobody can read them; they leave by
 * their TTL, or by a purge naming their id).
 */
export function createResponsesAdmin(options: ResponsesAdminOptions): ResponsesAdmin {
  return {
    async list(keyId) {
      const [summaries, names] = await Promise.all([options.store.summaries(keyId === "" ? undefined : keyId), options.keyNames()]);
      return summaries.map((s) => {
        const keyName = names.get(s.owner);
        return { keyId: s.owner, ...(keyName === undefined ? {} : { keyName }), count: s.count, bytes: s.bytes };
      });
    },
    async purge({ keyId, keyName }) {
      if ((keyId === "") === (keyName === "")) throw new GatewayError("invalid_request", "name a key_id or a key_name (one of them)", { field: "key_id" });
      const keyIds = keyId !== "" ? [keyId] : options.keyIdsNamed(keyName);
      let purged = 0;
      let conversationsPurged = 0;
      for (const id of keyIds) {
        purged += await options.store.purge(id);
        conversationsPurged += (await options.conversations?.purge(id)) ?? 0;
      }
      return { purged, conversationsPurged, keyIds };
    },
  };
}
