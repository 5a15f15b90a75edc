import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { readRecords, readSummary, tempDir } from "../helpers/job-files.js";
import { readDoc } from "../helpers/manual.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand } from "../helpers/spawn-cli.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** The extraction guide, whose contract example this runs. */
const README = readDoc("docs/guides/extraction.md");

/** The extraction guide's contract example: its yaml job and the sh block after it, as printed. */
function contractExample(): { yaml: string; commands: string[] } {
	const marker = README.indexOf("<!-- contract-example");
	expect(marker).toBeGreaterThan(-1);
	const start = README.indexOf("```yaml\n", marker) + "```yaml\n".length;
	const end = README.indexOf("```", start);
	const shStart = README.indexOf("```sh\n", end) + "```sh\n".length;
	const shEnd = README.indexOf("```", shStart);
	const commands = README.slice(shStart, shEnd)
		.split("\n")
		.filter((line) => line.trim() !== "")
		.map((line) => line.replace(/\s+#.*$/, ""));
	return { yaml: README.slice(start, end), commands };
}

it("the extraction guide's re-extraction and contract example runs as printed (its URLs pointed at the demo site)", async () => {
	assertBuilt();
	service = await startTestService({ concurrency: 2 });
	const { yaml, commands } = contractExample();
	expect(commands).toHaveLength(2);
	const dir = tempDir();
	mkdirSync(join(dir, "jobs"));
	const jobPath = join(dir, "jobs", "shop-prices.yaml");
	writeFileSync(jobPath, yaml.replaceAll("https://shop.example", service.site.url));
	const env = service.env;
	const run = async (command: string) => runPrintedCommand(command, env, dir).done;

	// Two nights: both keep the contract (the demo shop's prices, names and SKUs are all there).
	for (let night = 0; night < 2; night += 1) {
		const nightly = await run("npx scrapejob run jobs/shop-prices.yaml --quiet");
		expect(nightly.code, nightly.stderr).toBe(0);
	}
	const jobDir = join(dir, "output", "shop-prices");
	const newestNight = readdirSync(jobDir)
		.filter((name) => /^\d/.test(name))
		.sort()
		.pop()!;
	const paid = service.emulator.ledger.entries.length;

	const extract = await run(commands[0]!);
	expect(extract.code, extract.stderr).toBe(0);
	expect(service.emulator.ledger.entries.length).toBe(paid);
	const latestDir = join(
		jobDir,
		readdirSync(jobDir)
			.filter((name) => /^\d/.test(name))
			.sort()
			.pop()!,
	);
	expect(readSummary(latestDir)).toMatchObject({
		reextracted_from: newestNight,
		reextracted_latest: true,
		credits: { used: 0 },
		changes: { new: 0, changed: 0, unchanged: 3 },
		contract: { passed: true, broken: [] },
	});
	expect(
		readRecords(latestDir)
			.map((record) => record.data?.sku)
			.sort(),
	).toEqual(["DEMO-00001", "DEMO-00002", "DEMO-00003"]);

	// A night whose prices all break `min` (the bound raised here to make one): held, then accepted as printed.
	writeFileSync(jobPath, readFileSync(jobPath, "utf8").replace("min: 0.01", "min: 1000000"));
	const held = await run("npx scrapejob run jobs/shop-prices.yaml --quiet");
	expect(held.code).toBe(1);
	const heldId = readdirSync(jobDir)
		.filter((name) => /^\d/.test(name))
		.sort()
		.pop()!;
	expect(readSummary(join(jobDir, heldId))).toMatchObject({ stopped_reason: "contract_failed" });
	const accept = await run(commands[1]!.replace("20261122T021500Z-3f9a1c", heldId));
	expect(accept.code, accept.stderr).toBe(0);
	expect(accept.stderr).toContain(`run ${heldId} accepted`);
	expect(readFileSync(join(dir, "prices.csv"), "utf8").split("\n").filter(Boolean)).toHaveLength(4);
}, 90_000);
