import { z } from "zod";
import type { ContentPart } from "../../core/chat-request.js";
import { quoteClientValue } from "../../core/client-text.js";
import { invalidField, parseAt } from "./invalid-field.js";

/**
 * Content parts of input items as canonical parts, checked one by one so
 * that a part this gateway cannot take is refused with what to send instead.
 */

const inputText = z.object({ type: z.literal("input_text"), text: z.string() });
const outputText = z.object({ type: z.literal("output_text"), text: z.string() });
const refusal = z.object({ type: z.literal("refusal"), refusal: z.string() });
const inputImage = z.object({
  type: z.literal("input_image"),
  image_url: z.string().nullish(),
  file_id: z.string().nullish(),
  detail: z.enum(["auto", "low", "high"]).nullish(),
});

function partType(part: unknown, at: string): string {
  const type = part !== null && typeof part === "object" ? (part as { type?: unknown }).type : undefined;
  if (typeof type !== "string") invalidField(`${at}.type`, "must name the part's type");
  return type;
}

/** A part of a user, system or developer message. */
export function inputPart(part: unknown, at: string): ContentPart {
  const type = partType(part, at);
  switch (type) {
    case "input_text":
      return { type: "text", text: parseAt(inputText, part, at).text };
    case "input_image": {
      const image = parseAt(inputImage, part, at);
      if (!image.image_url) {
        if (image.file_id) invalidField(`${at}.file_id`, "this gateway stores no files: send the image as image_url (an https or data: URL)");
        invalidField(`${at}.image_url`, "required: an https or data: URL");
      }
      return { type: "image_url", url: image.image_url, detail: image.detail ?? undefined };
    }
    case "input_file":
      return invalidField(`${at}.type`, "input_file is not served here: send the file's text as input_text");
    default:
      return invalidField(`${at}.type`, `${quoteClientValue(type, 64)} parts are not served here: use input_text or input_image`);
  }
}

/** A part of an assistant message, as clients send back what they received. */
export function assistantPart(part: unknown, at: string): ContentPart {
  const type = partType(part, at);
  switch (type) {
    case "output_text":
      return { type: "text", text: parseAt(outputText, part, at).text };
    case "input_text":
      return { type: "text", text: parseAt(inputText, part, at).text };
    case "refusal":
      return { type: "text", text: parseAt(refusal, part, at).refusal };
    default:
      return invalidField(`${at}.type`, `${quoteClientValue(type, 64)} parts are not served in assistant messages: use output_text`);
  }
}

/** A part of a function call's output: text only, which every provider takes in a tool result. */
export function outputPart(part: unknown, at: string): ContentPart {
  const type = partType(part, at);
  if (type === "input_text") return { type: "text", text: parseAt(inputText, part, at).text };
  return invalidField(`${at}.type`, `${quoteClientValue(type, 64)} parts are not served in function call output: send input_text`);
}

/** A message's content (a string or parts) as canonical parts, with the path of each. */
export function contentParts(content: string | readonly unknown[], at: string, part: (value: unknown, at: string) => ContentPart): { parts: ContentPart[]; paths: string[] } {
  if (typeof content === "string") return content === "" ? { parts: [], paths: [] } : { parts: [{ type: "text", text: content }], paths: [at] };
  const paths = content.map((_, j) => `${at}[${j}]`);
  return { parts: content.map((value, j) => part(value, paths[j]!)), paths };
}
