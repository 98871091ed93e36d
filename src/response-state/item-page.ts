import { GatewayError } from "../core/errors.js";
import type { JsonObject } from "./response-ids.js";
import type { ItemPage, PageQuery } from "./stored-response.js";

/**
 * One page of a stored response's items, as `input_items` (HTTP) and
 * ListResponseItems (gRPC) page them:
 * in `order`, starting after the item `after` names, at most `limit`.
 * An `after` that is not one of the items is refused by name rather than
 * read as "from the start", which would repeat a page forever.
 */
export function pageOf(items: readonly JsonObject[], query: PageQuery): ItemPage {
  const ordered = query.order === "asc" ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    if (at < 0) throw new GatewayError("invalid_request", "after: names no item of this response", { field: "after" });
    start = at + 1;
  }
  const page = ordered.slice(start, start + query.limit);
  return { items: page, hasMore: start + page.length < ordered.length };
}
