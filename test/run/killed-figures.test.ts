import { existsSync, readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * A run killed before its summary (SIGKILL, the OOM killer) hands its figures on from the journal's
 * figures line (docs/reference/outputs.md, "summary.json"): the resume's summary counts the killed
 * process's wall time up to its last line, its 429 pause, and the balance it last saw.
 */
beforeAll(() => assertBuilt());

const PRODUCTS = 4;
const CREDITS = 10_000;

interface FiguresLine {
	e: "figures";
	at: string;
	wall_ms: number;
	rate_limit_pauses: number;
	abandoned: number;
	credits_remaining: number | null;
}

function figuresLines(runDir: string): FiguresLine[] {
	const path = join(runDir, "journal.jsonl");
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.split("\n")
		.filter((line) => line.endsWith("}"))
		.map((line) => JSON.parse(line) as { e: string })
		.filter((event): event is FiguresLine => event.e === "figures");
}

/** A product site that answers every path but `/held`, which it holds (no answer) until `release`. */
async function holdingSite() {
	const held: ServerResponse[] = [];
	const site = await startTargetSite((req, res) => {
		if (req.url === "/held") held.push(res);
		else html(res, `<h1>Product ${req.url}</h1><p>In stock.</p>`);
	});
	return {
		origin: site.origin,
		holding: () => site.requests.some((request) => request.path === "/held"),
		release: () => {
			for (const res of held.splice(0)) html(res, "<h1>Held</h1>");
		},
	};
}

describe("figures of a killed run", () => {
	it("SIGKILLed after a 429 pause (no summary.json): the resume's summary counts its wall time, its pause and the balance it last saw", async () => {
		const service = await useTestService({
			credits: CREDITS,
			reset_seconds: 1,
			faults: [{ kind: "rate_limit", match: "/\\/product\\/2$/", times: 1 }],
		});
		const site = await holdingSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = [...Array.from({ length: PRODUCTS }, (_, index) => `/product/${index + 1}`), "/held"];
		const job = writeJob(
			dir,
			"figures",
			`name: figures\nconcurrency: 1\ndefaults: {mode: request}\nretry: {attempts: 3, backoff_ms: 5, max_backoff_ms: 10}\ntargets:\n${targets.map((path) => `  - ${site.origin}${path}\n`).join("")}`,
		);

		// Killed while the last target is held, once a figures line has the pause and the balance after
		// the products' answers: the process has written no summary.
		const first = spawnCli(["run", job, "--out", out], service.env);
		let runDir = "";
		let spent = 0;
		await until(
			() => {
				runDir = onlyRunDir(out, "figures");
				const records = readRecords(runDir);
				spent = records.reduce((sum, record) => sum + record.credits_used, 0);
				const last = figuresLines(runDir).at(-1);
				return (
					records.length === PRODUCTS &&
					site.holding() &&
					last?.rate_limit_pauses === 1 &&
					last.credits_remaining === CREDITS - spent
				);
			},
			"a figures line after the products' answers",
			15_000,
		);
		first.child.kill("SIGKILL");
		expect((await first.done).signal).toBe("SIGKILL");
		site.release();
		expect(existsSync(join(runDir, "summary.json"))).toBe(false);
		expect(spent).toBeGreaterThan(0);
		const last = figuresLines(runDir).at(-1)!;
		const created = Date.parse(
			(JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as { created_at: string }).created_at,
		);
		// The killed process's lifetime up to its last line, the 429's one-second wait within it.
		expect(last.wall_ms).toBe(Date.parse(last.at) - created);
		expect(last.wall_ms).toBeGreaterThanOrEqual(1000);

		// A budget one credit above what was spent, below a target's worst case: the resume sends nothing,
		// so every figure it reports beyond its own instant is the killed process's.
		const resumed = await runCli(
			["run", job, "--out", out, "--resume", basename(runDir), "--max-credits", String(spent + 1)],
			{ env: service.env },
		);
		expect(resumed.code, resumed.stderr).toBe(1);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({
			stopped_reason: "budget_exhausted",
			rate_limit_pauses: 1,
			credits: { used: spent, remaining: CREDITS - spent },
			// Fetches in flight at the kill are not known (docs/reference/outputs.md).
			abandoned: 0,
			session: { done: 0, credits_used: 0, rate_limit_pauses: 0 },
		});
		expect(summary.wall_ms).toBe(last.wall_ms + summary.session!.wall_ms);
		// The terminal's summary and the report (rebuilt from the folder) say the same.
		expect(resumed.stdout).toContain(`${CREDITS - spent} remaining`);
		expect(resumed.stdout).toContain("1 rate-limit pause");
		expect(resumed.stdout).toContain(`time       ${(summary.wall_ms / 1000).toFixed(1)} s`);
		const report = readFileSync(join(runDir, "report.html"), "utf8");
		expect(report).toContain(
			`<div class="label">wall time</div><div class="value">${(summary.wall_ms / 1000).toFixed(2)} s</div>`,
		);
	}, 30_000);
});
