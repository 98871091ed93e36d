import type { EmbeddingAdapter } from "../embedding-adapter.js";

export const vertexEmbeddings: EmbeddingAdapter | undefined = undefined;
