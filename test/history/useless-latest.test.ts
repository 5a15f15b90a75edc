import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/**
 * A useless record (docs/guides/spending.md: a block page, a required field empty) is the target's latest
 * status, not its latest data: freshness does not count it, `export --latest` keeps the last useful
 * record, and change tracking reports no change for it (the price did not become empty: the page was blocked).
 */
describe("a useless record in the job's store", () => {
	it("is not fresh, is not exported as the latest data, and is no change", async () => {
		const service = await useTestService();
		let blocked = true;
		const site = await startTargetSite((_req, res) =>
			html(res, blocked ? "<h1>Access Denied</h1>" : '<h1>Widget</h1><p class="price">11</p>'),
		);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"prices",
			`name: prices\ndefaults: {mode: request}\noutput: {content: files}\nextract:\n  price: {css: .price, type: number, required: true}\ntargets:\n  - ${site.origin}/p/1\n`,
		);
		const runs = () =>
			readdirSync(join(out, "prices"))
				.filter(isRunFolderName)
				.sort()
				.map((name) => join(out, "prices", name));
		const run = async (...flags: string[]) => {
			const result = await runCli(["run", job, "--out", out, "--quiet", ...flags], { env: service.env });
			expect(result.code, result.stderr).toBeLessThanOrEqual(1);
			return readRecords(runs().at(-1)!);
		};
		const fetches = () => service.emulator.ledger.byEndpoint("realtime").length;

		// A first run that met the block page: useless. The next run with freshness fetches it again.
		expect((await run())[0]).toMatchObject({ status: "ok", useful: false });
		blocked = false;
		expect((await run("--freshness", "1h"))[0]).toMatchObject({ useful: true, data: { price: 11 } });
		expect(fetches()).toBe(2);

		// Blocked again: the record says so, with no change against the useful one, and no changes.jsonl line.
		blocked = true;
		const [useless] = await run();
		expect(useless).toMatchObject({ useful: false, change: null });
		expect(existsSync(join(runs().at(-1)!, "changes.jsonl"))).toBe(false);
		// The latest data is still the useful record's.
		const exported = join(dir, "latest.csv");
		const exporting = await runCli(["export", job, "--latest", "--from", out, "--out", exported]);
		expect(exporting.code, exporting.stderr).toBe(0);
		const [header, row] = readFileSync(exported, "utf8").trim().split("\n");
		expect(row!.split(",")[header!.split(",").indexOf("price")]).toBe("11");
		// A re-extraction of the latest pages reads the newest page, useless or not (a wrong block signature
		// or extract rule fixed since would make it useful): the block page here.
		const extract = await runCli(["extract", job, "--run", "latest", "--out", out]);
		expect(extract.code, extract.stderr).toBe(0);
		expect(readRecords(runs().at(-1)!)[0]).toMatchObject({ useful: false, useless_reason: "required_empty: price" });
		// Fresh from the useful record (seconds old): not fetched again.
		await run("--freshness", "1h");
		expect(fetches()).toBe(3);
	});
});
