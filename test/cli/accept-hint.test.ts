import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/index.js";
import { readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, runPrintedCommand } from "../helpers/spawn-cli.js";
import { startTargetSite } from "../helpers/target-site.js";

/**
 * A run its data contract held back prints the command that accepts it, and that command works as
 * printed (docs/behaviour.md, "Summaries and hints"): the documented `npx scrapejob`, the job file, the
 * results root the run used (`--from`, quoted), the run's folder name. It printed `accept it with
 * --accept RUN_ID`. The command is an export: accepting sends nothing and costs no credit.
 */

let emulator: Emulator | undefined;
afterEach(async () => {
	await emulator?.close();
	emulator = undefined;
});

/** Every product's price is below the contract's `min`: each run of this job is held. */
function heldJob(origin: string): string {
	const lines = [
		"name: shop",
		"defaults:",
		"  mode: request",
		"output:",
		"  content: files",
		"extract:",
		"  name: {css: h1}",
		"  price: {css: .price, type: number, min: 1000}",
		"targets:",
	];
	for (const id of [1, 2]) lines.push(`  - {url: "${origin}/product/${id}", id: p${id}}`);
	return `${lines.join("\n")}\n`;
}

const acceptHint = (stdout: string) => /publish it anyway with `([^`]+)`/.exec(stdout)?.[1] ?? "";

it("run and extract print the command that accepts a held run; run as printed, it accepts it", async () => {
	assertBuilt();
	const site = await startTargetSite((req, res) => {
		const id = /\/product\/(\d+)$/.exec(req.url ?? "")?.[1];
		res
			.writeHead(200, { "content-type": "text/html; charset=utf-8" })
			.end(`<html><body><h1>Product ${id}</h1><span class="price">$${id}0.00</span></body></html>`);
	});
	emulator = await startEmulator({ scenario: { concurrency: 2 } });
	const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
	const dir = tempDir();
	writeJob(dir, "shop", heldJob(site.origin));
	// An --out with a space: the hint must quote it to work when pasted.
	const out = "nightly out";

	const held = await runCli(["run", "shop.yaml", "--out", out, "--quiet"], { env, cwd: dir });
	expect(held.code).toBe(1);
	const runId = /^run\s+shop (\S+)/m.exec(held.stdout)?.[1] ?? "";
	const runDir = join(dir, out, "shop", runId);
	expect(readSummary(runDir)).toMatchObject({ stopped_reason: "contract_failed", contract: { passed: false } });
	const hint = acceptHint(held.stdout);
	expect(hint).toBe(
		`npx scrapejob export shop.yaml --latest --out shop-${runId}.csv --from 'nightly out' --accept ${runId}`,
	);
	const sentBefore = emulator.ledger.requestCount;
	const accepted = await runPrintedCommand(hint, env, dir).done;
	expect(accepted.stderr).toContain(`run ${runId} accepted: its records are promoted to latest`);
	expect(accepted.code).toBe(0);
	expect(JSON.parse(readFileSync(join(runDir, "contract.json"), "utf8")).state).toBe("accepted");
	// Published: the held run's records are the export's, and accepting it sent nothing.
	expect(readFileSync(join(dir, `shop-${runId}.csv`), "utf8")).toContain("Product 2");
	expect(emulator.ledger.requestCount).toBe(sentBefore);

	// A re-extraction held by the contract prints the same kind of command, with its own folder's name.
	const extracted = await runCli(["extract", "shop.yaml", "--run", "latest", "--out", out], { env, cwd: dir });
	expect(extracted.code).toBe(1);
	const extractId = /^run\s+shop (\S+)/m.exec(extracted.stdout)?.[1] ?? "";
	const extractHint = acceptHint(extracted.stdout);
	expect(extractHint).toBe(
		`npx scrapejob export shop.yaml --latest --out shop-${extractId}.csv --from 'nightly out' --accept ${extractId}`,
	);
	const again = await runPrintedCommand(extractHint, env, dir).done;
	expect(again.code).toBe(0);
	expect(again.stderr).toContain(`run ${extractId} accepted`);
	expect(JSON.parse(readFileSync(join(dir, out, "shop", extractId, "contract.json"), "utf8")).state).toBe("accepted");
}, 90_000);

it("run --accept of a run that is not held is refused before anything is sent (exit 2); export --accept stays the send-nothing path", async () => {
	assertBuilt();
	const site = await startTargetSite((_req, res) => {
		res.writeHead(200, { "content-type": "text/html" }).end("<html><body><h1>Product</h1></body></html>");
	});
	emulator = await startEmulator({ scenario: { concurrency: 2 } });
	const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
	const dir = tempDir();
	writeJob(dir, "shop", `name: shop\ntargets:\n  - ${site.origin}/a\n  - ${site.origin}/b\n`);
	const first = await runCli(["run", "shop.yaml", "--quiet"], { env, cwd: dir });
	expect(first.code, first.stderr).toBe(0);
	const runId = /^run\s+shop (\S+)/m.exec(first.stdout)?.[1] ?? "";
	const sentBefore = emulator.ledger.requestCount;

	const refused = await runCli(["run", "shop.yaml", "--accept", runId], { env, cwd: dir });
	expect(refused.code).toBe(2);
	expect(refused.stderr).toContain(`--accept: run ${runId} is not held back by its data contract`);
	expect(refused.stderr).toContain("nothing was sent");
	expect(emulator.ledger.requestCount).toBe(sentBefore);
	const library = await import("../../src/library/index.js");
	await expect(library.runJobFile(join(dir, "shop.yaml"), { cwd: dir, env, accept: runId })).rejects.toThrow(
		/is not held back by its data contract/,
	);
	expect(emulator.ledger.requestCount).toBe(sentBefore);
});
