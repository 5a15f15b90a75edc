// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXTRACTION_VARIABLES, JobValidationError, loadJob, RECORD_VARIABLES } from "../../src/job/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";
import { startTargetSite } from "../helpers/target-site.js";
import { runCli } from "./cli-harness.js";

/**
 * Commands that read a job's records send nothing, so they need only the `${NAME}`s of what they read
 * (docs/reference/job-file.md, "Rules"): an operator's shell without the run's secrets
 * exports and re-extracts; one without what names the job's folder is refused.
 */

const SOURCE_RUN = "20260101T000000Z-000000";

/** A job whose targets, request headers, pings and notification use variables, and one stored run of it. */
function storedJob(nameLine = "name: shop"): { dir: string; job: string; out: string } {
	const dir = tempDir();
	const job = writeJob(
		dir,
		"shop",
		[
			nameLine,
			"defaults:",
			"  additional_headers: {Authorization: 'Bearer ${SHOP_TOKEN}'}",
			"output: {content: files}",
			"extract:",
			"  price: {css: .price, type: number}",
			"healthcheck: ${HC_URL}",
			"notify: {url: '${HOOK_URL}', secret: '${HOOK_SECRET}'}",
			"targets:",
			"  - https://${SHOP_HOST}/product/1",
			"  - url: ${SECOND_URL}",
			"",
		].join("\n"),
	);
	const out = join(dir, "out");
	const run = join(out, "shop", SOURCE_RUN);
	mkdirSync(join(run, "pages"), { recursive: true });
	const lines = [1, 2].map((index) => {
		writeFileSync(join(run, "pages", `p${index}.html`), `<p class="price">$${index}.50</p>`);
		return JSON.stringify(
			record(`000000000000000${index}`, {
				url: `https://shop.test/product/${index}`,
				content_path: `pages/p${index}.html`,
			}),
		);
	});
	writeFileSync(join(run, "results.jsonl"), `${lines.join("\n")}\n`);
	return { dir, job, out };
}

describe("unset variables where a command does not read", () => {
	it("export: the records are written though the targets, headers, pings and notification lack their variables", async () => {
		const { dir, job, out } = storedJob();
		const to = join(dir, "latest.jsonl");
		const result = await runCli(["export", job, "--latest", "--out", to, "--from", out], { cwd: dir, env: {} });
		expect(result.code, result.stderr).toBe(0);
		expect(readFileSync(to, "utf8").trim().split("\n")).toHaveLength(2);
	});

	it("export: a variable of the job's name is still needed (exit 2 naming it)", async () => {
		const { dir, job, out } = storedJob("name: shop-${STAGE}");
		const to = join(dir, "latest.jsonl");
		const result = await runCli(["export", job, "--latest", "--out", to, "--from", out], { cwd: dir, env: {} });
		expect(result.code).toBe(2);
		expect(result.stderr).toContain("environment variable STAGE is not set");
		expect(result.stderr).not.toContain("SHOP_HOST");
	});

	it("extract: reads the stored pages without the pings' variable, not without the targets' or the notification's it sends", async () => {
		const { dir, job, out } = storedJob();
		const hook = await startTargetSite((_req, res) => res.writeHead(204).end());
		const env = {
			SHOP_HOST: "shop.test",
			SECOND_URL: "https://shop.test/product/2",
			SHOP_TOKEN: "t",
			HOOK_URL: `${hook.origin}/hook`,
			HOOK_SECRET: "hook-secret-1",
		};
		const result = await runCli(["extract", job, "--run", SOURCE_RUN, "--out", out], { cwd: dir, env });
		expect(result.code, result.stderr).toBe(0);
		expect(hook.requests.map((request) => request.path)).toEqual(["/hook"]);
		const without = await runCli(["extract", job, "--run", SOURCE_RUN, "--out", out], {
			cwd: dir,
			env: { SHOP_TOKEN: "t" },
		});
		expect(without.code).toBe(2);
		for (const name of ["SHOP_HOST", "SECOND_URL", "HOOK_URL", "HOOK_SECRET"])
			expect(without.stderr).toContain(`environment variable ${name} is not set`);
		expect(without.stderr).not.toContain("HC_URL");
	});

	it("loadJob: the unread values stay as written, and the job is valid; a fetching command's load refuses them all", async () => {
		const { dir, job } = storedJob();
		const { job: loaded } = await loadJob(job, {
			cwd: dir,
			env: {},
			checkSources: false,
			variablesNeeded: RECORD_VARIABLES,
		});
		expect(loaded.name).toBe("shop");
		expect(loaded.extraction?.dataColumns).toEqual(["price"]);
		const extraction = loadJob(job, { cwd: dir, env: {}, checkSources: false, variablesNeeded: EXTRACTION_VARIABLES });
		await expect(extraction).rejects.toThrow(JobValidationError);
		const refused = await loadJob(job, { cwd: dir, env: {}, checkSources: false }).catch((error: unknown) => error);
		expect(refused).toBeInstanceOf(JobValidationError);
		const messages = (refused as JobValidationError).problems.map((problem) => problem.message).join("\n");
		for (const name of ["SHOP_HOST", "SECOND_URL", "SHOP_TOKEN", "HC_URL", "HOOK_URL", "HOOK_SECRET"])
			expect(messages).toContain(`environment variable ${name} is not set`);
	});
});
