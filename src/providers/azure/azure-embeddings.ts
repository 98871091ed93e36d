import type { EmbeddingAdapter } from "../embedding-adapter.js";

export const azureEmbeddings: EmbeddingAdapter | undefined = undefined;
