import { describe, expect, it } from "vitest";
import { onlyRunDir, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { canMountPrivately, runOnSmallDisk } from "../helpers/private-mount.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

describe("a disk that fills up while pages are read in worker threads", () => {
	it.skipIf(!canMountPrivately())(
		"ends with exit 5 every time, its records kept: a page's answer that comes back after the stop ends nothing",
		async () => {
			assertBuilt();
			const service = await useTestService({ concurrency: 5 });
			const targets = Array.from({ length: 400 }, (_, i) => `  - ${service.site.url}/product/${(i % 15) + 1}?v=${i}`);
			// The page pool's answers race the stop: a page given up as the run stopped could still answer,
			// and piscina threw that answer as an unhandled "error" event (exit 1, no summary) in 3 runs of 4.
			for (let attempt = 1; attempt <= 3; attempt++) {
				const dir = tempDir();
				const job = writeJob(
					dir,
					"pages",
					`name: pages\noutput: {content: files}\nextract:\n  price:\n    css: .price\ntargets:\n${targets.join("\n")}\n`,
				);
				const { code, stderr, kept } = await runOnSmallDisk(dir, BIN, job, service.env, "400k");
				expect(code, `attempt ${attempt}: ${stderr}`).toBe(5);
				expect(stderr).toMatch(/output failed: .*\(ENOSPC\)/);
				expect(stderr).not.toContain("Unexpected message");
				// What was written stays: the records of the pages read before the disk filled.
				expect(readRecords(onlyRunDir(kept, "pages")).length).toBeGreaterThan(0);
			}
		},
		90_000,
	);
});
