import type { ResponsesSettings } from "../config/settings.js";
import type { ResponseStore } from "./stored-response.js";

/** What the Responses edges need to keep state: the store, and its settings as they are now (ttl and quota reload live). */
export interface ResponseState {
  readonly store: ResponseStore;
  readonly settings: () => ResponsesSettings;
}
