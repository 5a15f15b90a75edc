import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { countTargets, loadJob } from "../../src/job/index.js";
import { makeTempDir, writeFiles } from "./helpers.js";

const ROWS = 1_000_000;
const MAX_GROWTH_BYTES = 50 * 1024 * 1024;

/** A real collection before the baseline, so garbage left by setup is not counted as growth. */
function collectGarbage(): void {
	setFlagsFromString("--expose-gc");
	const gc = runInNewContext("gc") as () => void;
	gc();
}

async function writeBigCsv(path: string): Promise<void> {
	const out = createWriteStream(path);
	out.write("sku,url,price\r\n");
	const batch: string[] = [];
	for (let i = 0; i < ROWS; i++) {
		batch.push(`SKU-${i},https://shop.example/product/${i},${(i % 997) + 0.99}\r\n`);
		if (batch.length === 10_000) {
			if (!out.write(batch.join(""))) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
			batch.length = 0;
		}
	}
	out.end(batch.join(""));
	await finished(out);
}

describe("a 1,000,000-row CSV source", () => {
	it("is counted by streaming, with memory growth under 50 MB", async () => {
		const dir = await makeTempDir();
		await writeFiles(dir, { "job.yaml": "name: big\nsources:\n  - file: urls.csv\n    column: url\n" });
		await writeBigCsv(join(dir, "urls.csv"));
		const { job } = await loadJob("job.yaml", { cwd: dir, env: {}, checkSources: false });

		collectGarbage();
		const baseline = process.memoryUsage();
		let peakHeap = 0;
		let peakRss = 0;
		const sample = () => {
			const now = process.memoryUsage();
			peakHeap = Math.max(peakHeap, now.heapUsed - baseline.heapUsed);
			peakRss = Math.max(peakRss, now.rss - baseline.rss);
		};
		// Sampled on a timer while countTargets streams: reads yield to the event loop between chunks.
		let samples = 0;
		const sampler = setInterval(() => {
			samples++;
			sample();
		}, 5);
		const counts = await countTargets(job).finally(() => clearInterval(sampler));
		sample();

		expect(samples, "the sampler ran during the stream").toBeGreaterThan(20);
		expect(counts).toMatchObject({ targets: ROWS, duplicates: 0, skippedRows: 0 });
		expect(counts.creditRange).toEqual({ min: 2 * ROWS, max: 6 * ROWS });
		expect(peakHeap, `heap grew ${(peakHeap / 1e6).toFixed(1)} MB`).toBeLessThan(MAX_GROWTH_BYTES);
		expect(peakRss, `rss grew ${(peakRss / 1e6).toFixed(1)} MB`).toBeLessThan(MAX_GROWTH_BYTES);
	}, 60_000);
});
