import type { ProviderKind } from "../core/chat-request.js";
import { carriesKey, withKey } from "../provider-keys/key-header.js";
import type { ProviderKeys } from "../provider-keys/provider-keys.js";
import type { UpstreamClient, UpstreamResponse } from "./http-client.js";

const refused = (status: number) => status === 401 || status === 403;

/** Reads and drops a refused answer's body so its connection goes back to the pool. */
function discard(response: UpstreamResponse): void {
  response.body.resume();
  response.body.on("error", () => undefined);
}

/**
 * The upstream client with stored provider keys put in (provider-keys/provider-keys.ts):
 * the one place that sees every provider request, chat and embeddings
 * alike, and the status its provider answers, so no adapter and no attempt
 * changes. A stored key in use replaces the key apiKeyEnv gave the request.
 * A pending key is tried by one request at a time; if the provider refuses
 * it (401, 403), that same request is sent again with the key in use, so
 * the caller never sees the refusal (when there is no key in use, the
 * refusal is the answer). `kindOf` names the provider's kind from the
 * pool, which is the provider's name.
 */
export function withProviderKeys(client: UpstreamClient, keys: ProviderKeys, kindOf: (provider: string) => ProviderKind | undefined): UpstreamClient {
  return {
    async send(request, options) {
      const kind = kindOf(options.pool);
      const credential = kind === undefined ? undefined : keys.credentialFor(options.pool);
      if (kind === undefined || credential === undefined) return client.send(request, options);
      const serving = credential.active === undefined ? request : withKey(request, kind, credential.active);
      const { trial } = credential;
      if (!trial) return client.send(serving, options);
      let response: UpstreamResponse;
      try {
        response = await client.send(withKey(request, kind, trial.key), options);
      } catch (error) {
        trial.settle(0);
        throw error;
      }
      trial.settle(response.status);
      const fallback = credential.active !== undefined || carriesKey(request, kind);
      if (!refused(response.status) || !fallback) return response;
      discard(response);
      return client.send(serving, options);
    },
    stats: () => client.stats(),
    close: () => client.close(),
  };
}
