import { setFlagsFromString } from "node:v8";

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
 * Apply `RUN_HEAP_GROWING_PERCENT` to this process, unless the user chose a growth themselves
 * (`node --heap-growing-percent=N …`). V8 reads the flag each time it sets the next limit, so setting
 * it at run time takes effect from the next full collection on.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
	if (execArgv.some((arg) => arg.startsWith("--heap-growing-percent") || arg.startsWith("--heap_growing_percent")))
		return;
	setFlagsFromString(`--heap-growing-percent=${RUN_HEAP_GROWING_PERCENT}`);
}
