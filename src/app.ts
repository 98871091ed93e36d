import type { Config } from "./config/config.js";
import { createLogger, type Logger } from "./logging/logger.js";
import { createChatPipeline, type ChatPipeline } from "./pipeline/chat-pipeline.js";
import { type GatewayServer, startGatewayServer } from "./server/gateway-server.js";
import { createUpstreamClient } from "./upstream/http-client.js";

export interface SluiceOptions {
  readonly config: Config;
  /** Defaults to a JSON logger at the configured level on stdout. */
  readonly logger?: Logger;
  /** Overrides config.server (tests bind port 0). */
  readonly host?: string;
  readonly port?: number;
}

export interface Sluice {
  readonly server: GatewayServer;
  readonly pipeline: ChatPipeline;
  readonly logger: Logger;
  close(): Promise<void>;
}

/** Wires configuration, upstream client, pipeline and server into a running gateway. */
export async function startSluice(options: SluiceOptions): Promise<Sluice> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.log.level);
  const client = createUpstreamClient();
  const pipeline = createChatPipeline({ config, client, logger });
  const server = await startGatewayServer({
    pipeline,
    logger,
    host: options.host ?? config.server.host,
    port: options.port ?? config.server.port,
  });
  return {
    server,
    pipeline,
    logger,
    async close() {
      await server.close();
      await client.close();
    },
  };
}
