import type { ResponsesSettings } from "../config/settings.js";
import type { Logger } from "../logging/logger.js";
import type { ConversationStore } from "./conversation-store.js";
import type { ResponseStore } from "./stored-response.js";

/** What the Responses edges need to keep state: the store, and its settings as they are now (ttl and quota reload live). */
export interface ResponseState {
  readonly store: ResponseStore;
  readonly settings: () => ResponsesSettings;
  /** Where a response that could not be kept is reported (the answer is delivered anyway). */
  readonly logger?: Logger;
  /** The Conversations API and `conversation` on a response (absent: refused by name). */
  readonly conversations?: ConversationStore;
}
