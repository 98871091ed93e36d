import { agentScenario, agentSection } from "../agents.js";
import { log, type Services, startGateway } from "../services.js";

/** Coding agents' request sizes and marks (issue #44), on a gateway of its own on the simulator's Anthropic wire. */
export async function agentsRun(s: Services) {
  const result = await agentScenario(s.size.agents, { startGateway: (models, provider) => startGateway(s, {}, { models, provider }), simOrigin: s.simOrigin, log });
  log(agentSection(result));
  return result;
}
