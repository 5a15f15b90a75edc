import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startDemoSite } from "../../src/emulator/index.js";
import { BREAKER_CLIMB_SCENARIO, breakerClimbJob } from "../helpers/breaker-climb.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/**
 * An adaptive climb is a new paid fetch (docs/behaviour.md, "Adaptive mode", "Breakers"): once its domain's
 * breaker has opened, a target admitted before sends no stronger rung. The site at 127.0.0.2 renders its
 * prices by script (every rung below browser is useless); the adaptive target's first fetch is slow, and
 * meanwhile two request-mode targets of the domain fail charged and open its breaker (trip 2).
 */
describe("breaker and adaptive climbs", () => {
	it("a target whose domain's breaker opened while its first rung was in flight does not climb", async () => {
		const service = await useTestService(BREAKER_CLIMB_SCENARIO);
		const site = await startDemoSite({ host: "127.0.0.2" });
		try {
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(dir, "climb", breakerClimbJob(site.url));
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
			const runs = join(out, "climb");
			const runDir = join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
			const summary = readSummary(runDir);
			expect(summary.breakers, result.stderr).toMatchObject([{ domain: "127.0.0.2" }]);
			// The adaptive target's first rung only: its useless answer is its record.
			const sent = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.endsWith("/product/1"));
			expect(sent).toHaveLength(1);
			const record = readRecords(runDir).find((entry) => entry.url.endsWith("/product/1"));
			expect(record).toMatchObject({ status: "ok", useful: false, attempts: 1, credits_used: sent[0]!.creditsCharged });
			expect(summary.credits.used).toBe(
				service.emulator.ledger.byEndpoint("realtime").reduce((sum, entry) => sum + entry.creditsCharged, 0),
			);
		} finally {
			await site.close();
		}
	});
});
