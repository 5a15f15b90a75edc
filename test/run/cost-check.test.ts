import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkCost } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { readDoc } from "../helpers/manual.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("the dry run's cost check", () => {
	const estimate = { min: 100, max: 400 };
	it("holds the estimate against the budget: covers, may stop, stops, or none", () => {
		const known = { credits: 10_000 };
		expect(checkCost(estimate, null, known).budget.verdict).toBe("no_budget");
		expect(checkCost(estimate, 400, known).budget.verdict).toBe("covers");
		expect(checkCost(estimate, 100, known).budget.verdict).toBe("may_stop");
		expect(checkCost(estimate, 99, known).budget.verdict).toBe("stops");
		expect(checkCost(estimate, 0, known).budget.verdict).toBe("stops");
		expect(checkCost(estimate, 250, known).sentences[0]).toBe(
			"The budget, max_credits 250, lies inside the estimate (100–400): the run may stop at it (budget_exhausted, exit 1) before the end; continue with --resume --max-credits <larger>.",
		);
	});

	it("holds it against the balance, or says why the balance is unknown", () => {
		expect(checkCost(estimate, null, { credits: 400 }).balance.verdict).toBe("covers");
		expect(checkCost(estimate, null, { credits: 399 }).balance.verdict).toBe("may_run_out");
		const short = checkCost(estimate, null, { credits: 50 });
		expect(short.balance.verdict).toBe("runs_out");
		expect(short.sentences[1]).toBe(
			"The account has 50 credits, below the lowest estimate (100–400): the run will stop with insufficient_credits (exit 3) before the end.",
		);
		const unknown = checkCost(estimate, null, { credits: null, unknownBecause: "no account key" });
		expect(unknown.balance).toEqual({ credits: null, verdict: "unknown", unknown_because: "no account key" });
	});

	it("run --dry-run says it in words and in --json, reading the balance with one free look-up", async () => {
		service = await startTestService({ credits: 5 });
		const dir = tempDir();
		const targets = [1, 2, 3, 4].map((index) => `  - ${service?.site.url}/product/${index}`);
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults:", "  mode: request", "targets:", ...targets, ""].join("\n"),
		);
		const words = await runCli(["run", job, "--dry-run", "--max-credits", "6"], { env: service.env });
		expect(words.code).toBe(0);
		// Equal ends are one figure: "8", not "8–8".
		expect(words.stdout).toContain("estimated 8 credits if every target succeeds once");
		expect(words.stdout).toContain(
			"shop: The budget, max_credits 6, is below the lowest estimate (8): the run will stop at it",
		);
		expect(words.stdout).toContain("shop: The account has 5 credits, below the lowest estimate (8)");
		// The first-job guide's example of this output (Against the service), line by line.
		const readme = readDoc("docs/guides/first-job.md");
		const example = /```text\n(shop: 4 targets[^`]*)```/.exec(readme)?.[1];
		expect(example).toBeDefined();
		for (const line of example!.trim().split("\n")) expect(words.stdout).toContain(line);

		const json = await runCli(["run", job, "--dry-run", "--json"], { env: service.env });
		const [report] = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
		expect(report).toMatchObject({
			// --json keeps both ends.
			credits: { min: 8, max: 8 },
			budget: { max_credits: null, verdict: "no_budget" },
			balance: { credits: 5, verdict: "runs_out", unknown_because: null },
		});
		expect(service.emulator.ledger.byEndpoint("account/scraper")).toHaveLength(2);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);

		// Without an account key the balance is unknown, and the dry run still succeeds.
		const scraperOnly = await runCli(["run", job, "--dry-run", "--out", join(dir, "out")], {
			env: { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey },
		});
		expect(scraperOnly.code).toBe(0);
		expect(scraperOnly.stdout).toContain("The account's balance is unknown: only a scraper key is set");
	});
});

describe("run --dry-run with the flags that choose a run's targets", () => {
	it("counts and estimates what the run would fetch: freshness and --retry-failed read from the store; --resume and --continue said to be left aside", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		// One target ok, one failed (a 404): after one run, the first is fresh and the second failed.
		const targets = [`  - ${service.site.url}/product/1`, `  - ${service.site.url}/product/999`];
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "freshness: 1h", "defaults: {mode: request}", "targets:", ...targets, ""].join("\n"),
		);
		const dry = (...flags: string[]) =>
			runCli(["run", job, "--out", out, "--dry-run", ...flags], { env: service?.env });

		const before = await dry();
		expect(before.code, before.stderr).toBe(0);
		expect(before.stdout).toContain(
			"shop: 2 targets (request 2, browser 0, auto 0), 0 duplicates; estimated 4 credits",
		);
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		const paid = service.emulator.ledger.byEndpoint("realtime").length;

		// The job's freshness: the ok target is fresh, the failed one is not.
		const fresh = await dry();
		expect(fresh.stdout).toContain(
			"shop: 1 target (request 1, browser 0, auto 0), 0 duplicates, 1 left out (fresh); estimated 2 credits",
		);
		expect(fresh.stdout).toContain("/product/999\n");
		expect(fresh.stdout).not.toContain("/product/1\n");
		expect(fresh.stderr).toBe("");
		const all = await dry("--freshness", "0");
		expect(all.stdout).toContain("shop: 2 targets");
		const failed = await dry("--retry-failed", "--json");
		expect(JSON.parse(failed.stdout)[0]).toMatchObject({ targets: 1, deselected: 1, credits: { min: 2, max: 2 } });
		// --resume and --continue pick a run, which a dry run does not: said.
		for (const flag of ["--resume", "--continue"]) {
			const result = await dry(flag);
			expect(result.code, result.stderr).toBe(0);
			expect(result.stderr).toContain(
				`shop: --dry-run does not apply ${flag}: the estimate may count targets the run itself does not fetch`,
			);
		}
		// A fleet's run chooses from the fleet's records, not this folder's store: not previewed, and said.
		const fleet = await dry("--fleet", "postgres://scrapejob@127.0.0.1:1/none");
		expect(fleet.code, fleet.stderr).toBe(0);
		expect(fleet.stdout).toContain("shop: 2 targets");
		expect(fleet.stderr).toContain("shop: --dry-run does not apply freshness:");
		// The fleet named in the --config file alone, as the run itself reads it: the same.
		const config = join(dir, "fleet.env");
		writeFileSync(config, "SCRAPEJOB_FLEET_URL=postgres://scrapejob:db-pass-in-config@127.0.0.1:1/none\n");
		const configured = await dry("--config", config);
		expect(configured.code, configured.stderr).toBe(0);
		expect(configured.stdout).toContain("shop: 2 targets");
		expect(configured.stderr).toContain("shop: --dry-run does not apply freshness:");
		expect(`${configured.stdout}${configured.stderr}`).not.toContain("db-pass-in-config");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(paid);
	});
});
