import { resumeScenario } from "../resume.js";
import { BENCH_KEY, log, type Services } from "../services.js";

/** Resumable streams on vs off, on the gateway with a Redis store (the limited one). */
export function runResume(s: Services) {
  return resumeScenario(s.limitedUrl, BENCH_KEY, s.size.resume, log, { gateway: () => s.limited.cpuSeconds(), ...(s.redis ? { redis: () => s.redis!.cpuSeconds() } : {}) });
}
