import { PerformanceObserver } from "node:perf_hooks";
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";

/**
 * How far V8 may let the old space grow past what its last full collection kept, in percent, during
 * `scrapejob run`. A run's live heap is small and flat (~25 MB at any N), but every answer in flight
 * when a young collection happens is promoted, so a steady trickle of garbage reaches the old space.
 * V8's default factor, up to 4× on a machine with memory to spare, lets that trickle pile up to
 * ~100 MB before a full collection. 1.5× keeps the peak ~55 MB lower (200,000 targets: 219 → 165 MB
 * peak RSS) for ~45 more full collections of a ~26 MB heap (a few ms each).
 */
export const RUN_HEAP_GROWING_PERCENT = 50;

/**
 * The young generation's size a run keeps to, MiB (both semi-spaces): what V8 has after start-up. V8
 * doubles it to 32 MiB once enough survives young collections, and on a list run what survives is
 * the answers in flight, not data that would live long: the bigger space buys nothing but resident
 * memory (200,000 targets: peak RSS −15 MB, CPU the same within noise; bench/README.md).
 */
export const RUN_YOUNG_GENERATION_MB = 16;

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8 first compiles it with its baseline
 * compiler (Liftoff), then again with TurboFan once it is hot: that second compile holds ~30–35 MB
 * for a moment (a process at 67 MB peaks at 100; the bench's bare pool shows the same step). A run
 * keeps the baseline code: measured over 30,000 requests, no difference in CPU beyond the noise.
 */
const WASM_BASELINE_ONLY = "--liftoff-only";

const USER_HEAP_FLAGS = {
	wasm: /^--(no-)?(liftoff|wasm)/,
	growing: /^--heap[-_]growing[-_]percent/,
	young: /^--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|max[-_]young|min[-_]semi)/,
};

/**
 * Apply `RUN_HEAP_GROWING_PERCENT`, `RUN_YOUNG_GENERATION_MB` and baseline-only WebAssembly to this
 * process for a run, except where the user chose for themselves (`node --heap-growing-percent=N …`,
 * `--max-semi-space-size=N`, `--no-liftoff`).
 * Both are V8 flags read when V8 next decides, so setting them at run time takes effect at once.
 * Returns what undoes the young generation's watch (the old space's growth stays: the process ends).
 */
export function tuneHeapForRun(execArgv: readonly string[] = process.execArgv): () => void {
	if (!execArgv.some((arg) => USER_HEAP_FLAGS.growing.test(arg)))
		setFlagsFromString(`--heap-growing-percent=${RUN_HEAP_GROWING_PERCENT}`);
	if (!execArgv.some((arg) => USER_HEAP_FLAGS.wasm.test(arg))) setFlagsFromString(WASM_BASELINE_ONLY);
	if (execArgv.some((arg) => USER_HEAP_FLAGS.young.test(arg))) return () => {};
	return capYoungGeneration(RUN_YOUNG_GENERATION_MB * 1024 * 1024);
}

/**
 * Keep the young generation at `capBytes` at most. Only a flag at process start sets its maximum, but
 * V8 reads `--semi-space-growth-factor` each time it grows the space: after every collection the
 * factor is set to 1 (no growth) when the space has reached the cap and back to V8's 2 when it is
 * below — V8 halves the space when allocation slows (a long 429 pause, an outage), and a factor left
 * at 1 would keep it small, with a young collection every few hundred kilobytes, for the rest of the run.
 */
function capYoungGeneration(capBytes: number): () => void {
	let growing = true;
	const check = () => {
		const space = getHeapSpaceStatistics().find((candidate) => candidate.space_name === "new_space");
		if (!space) return;
		const atCap = space.space_size >= capBytes;
		if (atCap !== growing) return;
		growing = !atCap;
		setFlagsFromString(`--semi-space-growth-factor=${growing ? 2 : 1}`);
	};
	const observer = new PerformanceObserver(check);
	observer.observe({ entryTypes: ["gc"] });
	check();
	return () => {
		observer.disconnect();
		if (!growing) setFlagsFromString("--semi-space-growth-factor=2");
	};
}
