import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startDemoSite } from "../../src/emulator/index.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/**
 * `mode: adaptive` with fetches in flight (docs/behaviour.md, "Adaptive mode"): a target whose cheap answer
 * comes back useless after another target of its domain found the rung that works goes straight to that
 * rung, not through the rungs between that the other target paid to find useless.
 */
describe("mode: adaptive, a climb that starts after its domain learned a rung", () => {
	it("goes to the domain's learned rung at once", async () => {
		// A browser-only domain: datacenter, residential and auto fetches get its empty JavaScript shell (no price).
		const site = await startDemoSite({ host: "127.0.0.2" });
		const service = await useTestService({
			browser_only: ["//127.0.0.2:"],
			// The first target's first fetch is held back while the second target climbs every rung.
			faults: [{ kind: "slow", match: "/\\/product\\/1$/", times: 1, delay_ms: 3000 }],
		});
		try {
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(
				dir,
				"inflight",
				[
					"name: inflight",
					"concurrency: 2",
					"breaker: false",
					"defaults: {mode: adaptive}",
					"extract:",
					"  price: {css: .price, required: true}",
					"targets:",
					`  - ${site.url}/product/1`,
					`  - ${site.url}/product/2`,
					"",
				].join("\n"),
			);
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
			const runDir = onlyRunDir(out, "inflight");
			const records = readRecords(runDir);
			const byPath = (path: string) => records.find((record) => record.url.endsWith(path))!;
			// The second target found it: 1 + 2 + 2 + 5.
			expect(byPath("/product/2")).toMatchObject({ useful: true, mode_used: "browser", credits_used: 10 });
			// The first: its datacenter fetch (1), then the browser (5) — not residential and auto again.
			expect(byPath("/product/1")).toMatchObject({ useful: true, mode_used: "browser", credits_used: 6, attempts: 2 });
			expect(service.emulator.ledger.totalCharged()).toBe(16);
			expect(readSummary(runDir).credits.used).toBe(16);
		} finally {
			await site.close();
		}
	}, 30_000);
});
