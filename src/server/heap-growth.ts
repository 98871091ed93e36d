import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";

const MiB = 1024 * 1024;

/**
 * How much the old generation may grow past its size before the next full
 * collection, once it is large. V8 sizes that headroom as a factor of the
 * live heap (1.1–4×, near the top on a machine with memory to spare). A
 * gateway holding thousands of slow streams promotes a steady trickle of
 * per-delta objects that live until the stream's next delta; with V8's
 * factor they piled up to about 3.5× the live heap before a full GC. In one
 * session on the capacity benchmark (10,000 streams at one token a second,
 * 400–450 MiB live) RSS grew 180–190 KiB per stream with V8's factor and
 * 81–83 KiB with this cap. A fixed 20 % for every heap size cost the throughput
 * benchmark (10 fast streams, a small heap collected over and over) 40 %
 * more gateway CPU per delta, so small heaps keep V8's factor.
 */
export const HEAP_GROWTH_ALLOWANCE_BYTES = 128 * MiB;

/**
 * The growth percentage for an old generation of `bytes`: 0 (V8's own
 * factor) up to the allowance, then the allowance as a share of the heap in
 * steps of 5 % (so that the flag changes seldom), and never under 10 %, so
 * that full collections of a very large heap are not run back to back.
 */
export function heapGrowingPercent(bytes: number): number {
  if (bytes <= HEAP_GROWTH_ALLOWANCE_BYTES) return 0;
  return Math.max(10, Math.floor((100 * HEAP_GROWTH_ALLOWANCE_BYTES) / bytes / 5) * 5);
}

/** The old generation's used bytes (every space but the young generation's), live objects and garbage alike. */
export function oldGenerationBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) if (!space.space_name.startsWith("new_")) bytes += space.space_used_size;
  return bytes;
}

export interface HeapGrowthOptions {
  readonly execArgv?: readonly string[];
  readonly intervalMs?: number;
  readonly read?: () => number;
  readonly setFlag?: (flag: string) => void;
}

/**
 * Once a second, sets V8's `--heap-growing-percent` from the size of the old
 * generation, which V8 reads whenever it computes the next old-generation
 * limit. Polled rather than observed: a PerformanceObserver on "gc" entries
 * runs JavaScript after every scavenge, and cost the throughput benchmark
 * 10–20 % more gateway CPU per delta. It is not a flag that NODE_OPTIONS
 * accepts, hence this rather than a launch flag. An operator who gives the
 * flag on the command line (`node --heap-growing-percent=N`, 0 for V8's
 * behaviour) keeps it: nothing is started then. Returns a stop.
 */
export function governHeapGrowth(options: HeapGrowthOptions = {}): () => void {
  const execArgv = options.execArgv ?? process.execArgv;
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return () => undefined;
  const read = options.read ?? oldGenerationBytes;
  const setFlag = options.setFlag ?? setFlagsFromString;
  let current = 0;
  const timer = setInterval(() => {
    const percent = heapGrowingPercent(read());
    if (percent === current) return;
    current = percent;
    setFlag(`--heap-growing-percent=${percent}`);
  }, options.intervalMs ?? 1_000);
  timer.unref();
  return () => clearInterval(timer);
}
