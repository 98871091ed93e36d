import type { PageQuery } from "../../response-state/stored-response.js";
import { invalidField } from "./invalid-field.js";

/** The query of a list of items (`input_items`, conversation items): `after` (an item id), `limit` 1–100 (default 20), `order` asc or desc (default desc). */
export function pageQueryOf(search: URLSearchParams): PageQuery {
  const limitText = search.get("limit");
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) invalidField("limit", "must be a whole number from 1 to 100");
  const order = search.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") invalidField("order", 'must be "asc" or "desc"');
  const after = search.get("after");
  return { limit, order, ...(after ? { after } : {}) };
}
