import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openJobHistory } from "../../src/history/index.js";
import { loadJob } from "../../src/job/index.js";
import type { LockInfo, RunLock } from "../../src/run/locks/run-lock.js";
import { reextractRun } from "../../src/run/reextract/reextract.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";

/**
 * A re-extraction stops and is fenced as a run is (docs/guides/extraction.md, "Re-extraction and data
 * contracts"; docs/behaviour.md, "Stops" and "Locks"): Ctrl-C leaves an incomplete folder that is never
 * promoted and a command that runs it again; a second Ctrl-C ends it at once with summary.json
 * written; a record after the job's lock was taken over is not written.
 */

/** The run a re-extraction reads: an old enough name that every new run sorts after it. */
const SOURCE_RUN = "20260101T000000Z-000000";

/**
 * A job with `count` stored pages in a run folder written here (nothing fetched): `out/shop/SOURCE_RUN/`.
 * `slow`: each page is one 2.4 MB page, hard-linked (a worker takes most of a second to read it).
 */
function storedShop(count: number, slow = false): { dir: string; out: string; jobPath: string } {
	const dir = tempDir();
	const out = join(dir, "out");
	const jobPath = writeJob(
		dir,
		"shop",
		[
			"name: shop",
			"defaults: {mode: request}",
			"output: {content: files}",
			"extract:",
			"  price: {css: .price, type: number}",
			"targets:",
			"  - https://shop.test/product/1",
			"",
		].join("\n"),
	);
	const source = join(out, "shop", SOURCE_RUN);
	mkdirSync(join(source, "pages"), { recursive: true });
	const lines: string[] = [];
	const bigPage = join(dir, "big.html");
	if (slow)
		writeFileSync(bigPage, `<html><body>${"<p>a</p>".repeat(300_000)}<span class="price">$1.00</span></body></html>`);
	for (let index = 1; index <= count; index += 1) {
		const page = join(source, "pages", `p${index}.html`);
		if (slow) linkSync(bigPage, page);
		else
			writeFileSync(page, `<html><body><h1>Product ${index}</h1><span class="price">$${index}.00</span></body></html>`);
		lines.push(
			JSON.stringify(
				record(`p${index}`, { url: `https://shop.test/product/${index}`, content_path: `pages/p${index}.html` }),
			),
		);
	}
	writeFileSync(join(source, "results.jsonl"), `${lines.join("\n")}\n`);
	return { dir, out, jobPath };
}

/** The re-extraction's folder (any run folder but the source) once it holds `atLeast` records. */
async function waitForNewRecords(out: string, atLeast: number): Promise<string> {
	const jobDir = join(out, "shop");
	const deadline = Date.now() + 30_000;
	while (Date.now() < deadline) {
		for (const name of readdirSync(jobDir).filter((entry) => isRunFolderName(entry) && entry !== SOURCE_RUN)) {
			const file = join(jobDir, name, "results.jsonl");
			if (existsSync(file) && readFileSync(file, "utf8").split("\n").length - 1 >= atLeast) return join(jobDir, name);
		}
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error(`no re-extraction with ${atLeast} records within 30 s`);
}

/** Resolves once no signal waits for the process (Linux: /proc/PID/status, its pending masks). */
async function untilDelivered(pid: number): Promise<void> {
	const pending = () =>
		readFileSync(`/proc/${pid}/status`, "utf8")
			.split("\n")
			.filter((line) => /^(SigPnd|ShdPnd):/.test(line))
			.some((line) => !/:\s*0+$/.test(line));
	while (pending()) await new Promise((resolve) => setTimeout(resolve, 1));
}

function contractState(runDir: string): string {
	return (JSON.parse(readFileSync(join(runDir, "contract.json"), "utf8")) as { state: string }).state;
}

describe("Ctrl-C during extract --run", () => {
	it("ends cleanly: exit 130, an incomplete folder never promoted, and a printed command that runs it again", async () => {
		assertBuilt();
		const pages = 4000;
		const { dir, out } = storedShop(pages);
		const extract = spawnCli(["extract", "shop.yaml", "--run", SOURCE_RUN, "--out", "out"], {}, dir);
		const runDir = await waitForNewRecords(out, 1);
		extract.child.kill("SIGINT");
		const stopped = await extract.done;
		expect(stopped.code, stopped.stderr).toBe(130);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: false, stopped_reason: "interrupted", reextracted_from: SOURCE_RUN });
		expect(summary.stop_message).toBe("stop requested: the re-extraction stopped; run it again");
		const written = readRecords(runDir);
		expect(written.length).toBeLessThan(pages);
		// Every page handed to a worker finished within the grace period: no page was read and dropped.
		expect(summary.targets.done).toBe(written.length);
		// The source is read as a stream: how many pages it has left is not known, and no count is made up.
		expect(summary.targets).toMatchObject({ total: null, remaining: null });
		expect(stopped.stdout).toMatch(/^targets {4}\d+ done: /m);
		expect(stopped.stdout).toMatch(/^remaining {2}finish with `/m);
		// Never promoted: the folder stays `pending`, out of "latest".
		expect(contractState(runDir)).toBe("pending");
		const history = openJobHistory(join(out, "shop"));
		try {
			expect(history.get("p1")?.okRun).toBe(SOURCE_RUN);
		} finally {
			history.close();
		}
		// The hint runs the re-extraction again, as pasted: complete, every page read, promoted.
		const hint = /finish with `([^`]+)`/.exec(stopped.stdout)?.[1];
		expect(hint, stopped.stdout).toBe(`npx scrapejob extract shop.yaml --run ${SOURCE_RUN} --out out`);
		const again = await runPrintedCommand(hint!, {}, dir).done;
		expect(again.code, again.stderr).toBe(0);
		const rerun = readdirSync(join(out, "shop"))
			.filter((name) => isRunFolderName(name) && name !== SOURCE_RUN)
			.sort()
			.map((name) => join(out, "shop", name))
			.pop()!;
		expect(rerun).not.toBe(runDir);
		expect(readSummary(rerun)).toMatchObject({ complete: true, targets: { done: pages } });
		expect(contractState(rerun)).toBe("passed");
	}, 120_000);

	it("a second Ctrl-C ends it at once: summary.json as it stands, and the line says how to run it again", async () => {
		assertBuilt();
		// Slow pages: the first Ctrl-C leaves pages in a worker for most of a second (its grace period).
		const { dir, out } = storedShop(30, true);
		const extract = spawnCli(["extract", "shop.yaml", "--run", SOURCE_RUN, "--out", "out"], {}, dir);
		const runDir = await waitForNewRecords(out, 1);
		extract.child.kill("SIGINT");
		// Two signals sent back to back are one (they do not queue): the second goes once the first was taken.
		await untilDelivered(extract.child.pid!);
		extract.child.kill("SIGINT");
		const stopped = await extract.done;
		expect(stopped.code, stopped.stderr).toBe(130);
		expect(stopped.stderr).toMatch(
			new RegExp(
				`scrapejob: stopped at once \\(SIGINT again\\); records written so far are kept; summary\\.json written in .+; run it again with \`npx scrapejob extract shop\\.yaml --run ${SOURCE_RUN} --out out\`\\n$`,
			),
		);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "interrupted" });
		expect(contractState(runDir)).toBe("pending");
	}, 120_000);
});

describe("a re-extraction's records are fenced as a run's", () => {
	it("once the job's lock is taken over nothing more is written: no record, no summary, no report, never promoted", async () => {
		const { dir, out, jobPath } = storedShop(40);
		const { job } = await loadJob(jobPath, { env: {}, cwd: dir, checkSources: false });
		const history = openJobHistory(join(out, "shop"));
		// A lock another host takes over while the fourth record's lines go out: each record asks the lease
		// three times (before its page file, before its lines, after them), so the twelfth ask finds it lost
		// after the lines were written, and they are taken back.
		const lost: Array<(holder: LockInfo) => void> = [];
		let asks = 0;
		let held = true;
		const lock: RunLock = {
			path: join(out, "shop", ".lock"),
			tookOver: null,
			release: () => undefined,
			onLost: (listener) => lost.push(listener),
			isHeld: () => {
				asks += 1;
				if (held && asks === 12) {
					held = false;
					for (const listener of lost) listener({ pid: 4242, host: "host-b", run_id: "other" } as unknown as LockInfo);
				}
				return held;
			},
		};
		let result: Awaited<ReturnType<typeof reextractRun>>;
		try {
			result = await reextractRun({
				job,
				outRoot: out,
				from: SOURCE_RUN,
				history,
				signal: new AbortController().signal,
				lock,
				threads: 1,
			});
		} finally {
			history.close();
		}
		expect(result.stopReason).toBe("lease_lost");
		expect(result.reportPath).toBeNull();
		expect(readRecords(result.runDir).map((written) => written.id)).toEqual(["p1", "p2", "p3"]);
		// The folder is the other process's now: no summary, no report, and it stays out of "latest".
		expect(existsSync(join(result.runDir, "summary.json"))).toBe(false);
		expect(existsSync(join(result.runDir, "report.html"))).toBe(false);
		expect(contractState(result.runDir)).toBe("pending");
	});
});
