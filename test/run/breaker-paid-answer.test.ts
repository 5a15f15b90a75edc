import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { journalLines, onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * An answer paid before its domain's breaker opened, its page still being read when the process was killed
 * (docs/behaviour.md, "Breakers", "Paid answers waiting for their page"): the resume reads it back and writes
 * its record, though the breaker is still open — nothing is sent for it, and it is no parked target.
 */
beforeAll(() => assertBuilt());

/** /big's target id, from its journalled start (the only target whose answer is large). */
function bigId(runDir: string): string | undefined {
	return journalLines<{ e: string; answer?: { id: string } }>(runDir).find(
		(line) => line.e === "paid" && (line.answer as { bytes?: number }).bytes! > 1_000_000,
	)?.answer?.id;
}

describe("breaker and a paid answer waiting for its page", () => {
	it("is recorded by the resume while the breaker stays open", async () => {
		// Every page a block page (the job's signature); /big takes the page pool a while to read.
		const rows = `<div class="row"><span>${"x".repeat(80)}</span></div>`.repeat(300_000);
		const site = await startTargetSite((req, res) =>
			html(res, req.url === "/big" ? `<h1>SOLDOUT</h1>${rows}` : "<h1>SOLDOUT</h1>"),
		);
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const pages = Array.from({ length: 7 }, (_, index) => `  - ${site.origin}/p/${index + 1}`);
		const job = writeJob(
			dir,
			"paidopen",
			[
				"name: paidopen",
				"concurrency: 2",
				"defaults: {mode: request}",
				"block_signatures: [SOLDOUT]",
				"breaker: {cool_down: 1h}",
				"max_body_mb: 40",
				"page_timeout: 60s",
				"output: {content: none}",
				"extract:",
				"  heading: h1",
				"  rows: {css: .row span, all: true}",
				"targets:",
				...pages,
				`  - ${site.origin}/big`,
				`  - ${site.origin}/p/8`,
				`  - ${site.origin}/p/9`,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out], service.env);
		let runDir = "";
		await until(() => {
			runDir = onlyRunDir(out, "paidopen");
			const lines = journalLines<{ e: string; answer?: { id: string } }>(runDir);
			const bigPaid = lines.some((line) => line.e === "paid" && line.answer?.id === bigId(runDir));
			return bigPaid && lines.some((line) => line.e === "breaker") && readRecords(runDir).length === 8;
		}, "the breaker open while /big is read").catch((error) => {
			console.log(
				journalLines<{ e: string; answer?: { id: string } }>(runDir)
					.map((line) => line.e)
					.join(","),
				readRecords(runDir)
					.map((r) => r.url)
					.join(" "),
			);
			throw error;
		});
		first.child.kill("SIGKILL");
		await first.done;
		const paid = service.emulator.ledger.totalCharged();
		expect(readRecords(runDir).some((record) => record.url.endsWith("/big"))).toBe(false);

		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(6);
		// Nothing sent: /big read back from paid/, /p/9 parked.
		expect(service.emulator.ledger.totalCharged()).toBe(paid);
		const records = readRecords(runDir);
		expect(records.filter((record) => record.url.endsWith("/big"))).toHaveLength(1);
		const summary = readSummary(runDir);
		expect(summary.breakers).toEqual([expect.objectContaining({ parked: 1, credits_saved: 2 })]);
		expect(summary.credits.used).toBe(paid);
	}, 60_000);
});
