import type { Target } from "../job/index.js";

/**
 * Pages handed out and not settled yet, per depth: what decides when the next depth is due (its depth
 * two above has settled), and what the feed waits on when nothing is due.
 */
export class OutstandingPages {
	private readonly byDepth = new Map<number, number>();
	private count = 0;
	private wakeUp: (() => void) | null = null;

	/** Pages handed out and not settled, at every depth. */
	get total(): number {
		return this.count;
	}

	/** The lowest depth of a page handed out and not settled, or null. */
	lowest(): number | null {
		let lowest: number | null = null;
		for (const depth of this.byDepth.keys()) if (lowest === null || depth < lowest) lowest = depth;
		return lowest;
	}

	/** A page was handed out. */
	add(target: Target): void {
		this.change(target, 1);
	}

	/** A page handed out is done with: whoever waits is woken (its links may be due). */
	settle(target: Target): void {
		this.change(target, -1);
		this.wake();
	}

	/** Resolves at the next `settle` or `wake`. */
	async settled(): Promise<void> {
		await new Promise<void>((resolve) => {
			this.wakeUp = resolve;
		});
		this.wakeUp = null;
	}

	/** Wake whoever waits in `settled` (the run is stopping: pages may never settle). */
	wake(): void {
		this.wakeUp?.();
	}

	private change(target: Target, change: 1 | -1): void {
		const depth = target.crawl?.depth ?? 0;
		const count = (this.byDepth.get(depth) ?? 0) + change;
		if (count > 0) this.byDepth.set(depth, count);
		else this.byDepth.delete(depth);
		this.count += change;
	}
}
