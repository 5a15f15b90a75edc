import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readPriorProgress } from "../../src/run/records/resume-state.js";
import { tempDir } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";
import { targetIdForTest } from "../helpers/target-ids.js";

describe("resume at scale", () => {
	it("reads 900,000 finished records into a compact set, not into objects", async () => {
		const path = join(tempDir(), "results.jsonl");
		const stream = createWriteStream(path);
		const done = 900_000;
		let chunk = "";
		for (let index = 0; index < done; index += 1) {
			const line = record(targetIdForTest(index), { url: `https://shop.example/p/${index}`, credits_remaining: 1e9 });
			chunk += `${JSON.stringify(line)}\n`;
			if (chunk.length > 1 << 20) {
				if (!stream.write(chunk)) await new Promise<void>((resolve) => stream.once("drain", () => resolve()));
				chunk = "";
			}
		}
		stream.end(chunk);
		await new Promise<void>((resolve) => stream.once("finish", () => resolve()));

		global.gc?.();
		const before = process.memoryUsage();
		const started = Date.now();
		const prior = await readPriorProgress(path);
		const elapsedMs = Date.now() - started;
		global.gc?.();
		const after = process.memoryUsage();
		const retainedMb = (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / 1e6;
		console.info(`resume scan: ${done} records in ${elapsedMs} ms, ~${retainedMb.toFixed(1)} MB retained`);

		expect(prior.done.size).toBe(done);
		expect(prior.done.has(targetIdForTest(123_456))).toBe(true);
		expect(prior.done.has(targetIdForTest(done + 1))).toBe(false);
		expect(prior.statistics.creditsUsed).toBe(done * 2);
		expect(retainedMb).toBeLessThan(60);
	}, 60_000);
});
