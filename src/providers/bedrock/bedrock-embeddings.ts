import type { EmbeddingAdapter } from "../embedding-adapter.js";

export const bedrockEmbeddings: EmbeddingAdapter | undefined = undefined;
