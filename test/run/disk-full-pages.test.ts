import { describe, expect, it } from "vitest";
import { onlyRunDir, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { canMountPrivately, runOnSmallDisk } from "../helpers/private-mount.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

describe("a disk that fills up while pages are read in worker threads", () => {
	it.skipIf(!canMountPrivately())(
		"ends with exit 5 every time, its records kept, and --continue finishes that run once there is room: a page's answer that comes back after the stop ends nothing",
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
				if (attempt > 1) continue;
				// Once there is room, the same command with --continue finishes that run (exit-codes.md, 5): no new
				// run folder, each target once; paid twice at most the fetches in flight when the disk filled (their
				// answers could not be kept: 5 at a time, 2 credits each).
				const continued = await runCli(["run", job, "--out", kept, "--continue", "--quiet"], { env: service.env });
				expect(continued.code, continued.stderr).toBe(0);
				const runDir = onlyRunDir(kept, "pages");
				const records = readRecords(runDir);
				expect(new Set(records.map((record) => record.id)).size).toBe(400);
				expect(records).toHaveLength(400);
				const charged = service.emulator.ledger.totalCharged();
				const onRecords = records.reduce((sum, record) => sum + Number(record.credits_used), 0);
				expect(charged - onRecords).toBeGreaterThanOrEqual(0);
				expect(charged - onRecords).toBeLessThanOrEqual(5 * 2);
			}
		},
		90_000,
	);
});
