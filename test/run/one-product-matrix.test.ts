import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it, type TestContext } from "vitest";
import {
	type DemoSite,
	type Emulator,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "../../src/emulator/index.js";
import { type RunJobFileOptions, type RunJobFileResult, runJobFile } from "../../src/index.js";
import type { ResultRecord, RunSummary } from "../../src/output/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/**
 * The matrix of entry points and stops (docs/guides/library.md; docs/behaviour.md, "Pay once, never lose a record"):
 * entry point {spawned CLI, `runJobFile`} × {fresh run, `--resume` after SIGINT, after SIGKILL, after a
 * budget stop} × {freshness, retry-failed, extract, crawl}. In every cell both entry points run the same
 * job against the same demo site, each with its own emulator (its own ledger), at the same time, and
 * must end with the same records, the same credits (every URL paid once) and the same summary.
 *
 * Kills land mid-run on events, not sleeps: SIGINT once results.jsonl holds a few records; SIGKILL at an
 * instant the emulator (in this process) and the run folder together show that every task the service
 * handed out is journalled, so the promise "a resumed run polls it instead of paying twice" is what
 * the ledger checks — the kill cells make every fetch a task (the emulator's `timeout_ms`).
 */

const DIST_INDEX = pathToFileURL(join(import.meta.dirname, "..", "..", "dist", "index.js")).href;
/** Every cell's account limit and the job's concurrency. */
const CONCURRENCY = 2;
const TASK_POLL_MS = 20;

type Entry = "cli" | "library";
type Mode = "fresh" | "sigint" | "sigkill" | "budget";

/** One feature of the matrix: a job, what earlier runs leave behind, the choices of the run under test. */
interface Feature {
	readonly name: string;
	/** The job under test (YAML), on `site`. */
	job(site: string): string;
	/** Source files written beside the job (name → text), on `site`. */
	files?(site: string): Record<string, string>;
	/** Earlier runs that the run under test builds on (history): their job file and faults. */
	readonly setup?: { readonly job: (site: string) => string };
	/** Emulator faults (the setup run meets them; `times` makes them run out before the run under test). */
	readonly faults?: ScenarioInput["faults"];
	/** The flags of the run under test, and the same as library options. */
	readonly flags: readonly string[];
	readonly options: Partial<RunJobFileOptions>;
	/** Budget of the budget cell's first session (credits; a fetch costs 1 here). */
	readonly budget: number;
	/** What every cell must end with, whatever the entry point and the interruptions. */
	readonly expected: {
		/** Paths of the URLs with a record in the run under test, sorted. */
		readonly paths: readonly string[];
		readonly fresh?: number;
		/** `targets.total` when it is not one per record (a crawl's is not known: null). */
		readonly total?: number | null;
	};
}

const products = (site: string, from: number, to: number) =>
	Array.from({ length: to - from + 1 }, (_, index) => `  - ${site}/product/${from + index}`);

const head = (extra: string[] = []) => [
	"name: shop",
	`concurrency: ${CONCURRENCY}`,
	...extra,
	"retry:",
	"  attempts: 1",
	"defaults:",
	"  mode: request",
];

const range = (from: number, to: number, prefix: string) =>
	Array.from({ length: to - from + 1 }, (_, index) => `${prefix}${from + index}`);

const FEATURES: readonly Feature[] = [
	{
		name: "freshness",
		// The earlier run fetched products 1–3; now 1–9 with freshness 1h: 1–3 are fresh, 4–9 are fetched.
		setup: { job: (site) => [...head(), "targets:", ...products(site, 1, 3), ""].join("\n") },
		job: (site) => [...head(["freshness: 1h"]), "targets:", ...products(site, 1, 9), ""].join("\n"),
		flags: [],
		options: {},
		budget: 3,
		expected: { paths: range(4, 9, "/product/"), fresh: 3 },
	},
	{
		name: "retry-failed",
		// The earlier run: products 1–8, of which 3–8 failed (a scraping error each, then the faults run out).
		setup: { job: (site) => [...head(), "targets:", ...products(site, 1, 8), ""].join("\n") },
		faults: [{ kind: "scraping_error", match: "/\\/product\\/[3-8]$/", times: 6 }],
		job: (site) => [...head(), "targets:", ...products(site, 1, 8), ""].join("\n"),
		flags: ["--retry-failed"],
		options: { retryFailed: true },
		budget: 2,
		expected: { paths: range(3, 8, "/product/") },
	},
	{
		name: "extract",
		job: (site) =>
			[
				...head(),
				"extract:",
				"  title: {css: h1, required: true}",
				"  price: {css: .price, type: number}",
				"  sku: {regex: 'SKU-(\\d+)'}",
				"targets:",
				...products(site, 1, 4),
				"sources:",
				"  - urls.txt",
				"",
			].join("\n"),
		// Rows repeating a row or an inline target (one page): each runs once, resumed or not.
		files: (site) => ({
			"urls.txt": `${range(5, 8, `${site}/product/`).join("\n")}\n${site}/product/6#top\n${site}/product/2\n${site}/product/7\n`,
		}),
		flags: [],
		options: {},
		budget: 3,
		expected: { paths: range(1, 8, "/product/") },
	},
	{
		name: "crawl",
		// /graph/1 and its links, one level down (the demo site's link graph: 5 pages, robots.txt obeyed).
		job: (site) =>
			[...head(), "crawl:", "  max_depth: 1", "  max_pages: 50", "targets:", `  - ${site}/graph/1`, ""].join("\n"),
		flags: [],
		options: {},
		budget: 3,
		expected: { paths: ["/graph/1", "/graph/15", "/graph/2", "/graph/21", "/graph/39"], total: null },
	},
];

const MODES: readonly Mode[] = ["fresh", "sigint", "sigkill", "budget"];

/** The scenario of a cell: latency so kills land mid-run; in the SIGKILL cells every fetch becomes a task. */
function scenarioFor(mode: Mode, feature: Feature): ScenarioInput {
	return {
		concurrency: CONCURRENCY,
		// SIGKILL cells: a task processing long enough that both slots are held at once even under load.
		latency_ms: mode === "fresh" ? 0 : mode === "sigkill" ? 400 : 60,
		...(mode === "sigkill" ? { timeout_ms: 5 } : {}),
		...(feature.faults ? { faults: feature.faults } : {}),
	};
}

interface Side {
	readonly entry: Entry;
	readonly emulator: Emulator;
	readonly env: NodeJS.ProcessEnv;
	readonly dir: string;
	readonly jobPath: string;
	/** Ledger entries (realtime) that belong to the run under test (after the setup run). */
	ledgerFrom: number;
	/** The setup run's folder name: not the run under test. */
	setupRun?: string | undefined;
}

/** What one step of a side ended with: the summary it returned or wrote, and the CLI's exit code. */
interface StepOutcome {
	summary: RunSummary;
	code: number | null;
}

beforeAll(() => assertBuilt());

function runDirOf(side: Side): string {
	const jobDir = join(side.dir, "out", "shop");
	const names = existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName).sort() : [];
	const last = names.at(-1);
	if (!last) throw new Error(`no run folder in ${jobDir}`);
	return join(jobDir, last);
}

function libraryOptions(side: Side, extra: Partial<RunJobFileOptions>): RunJobFileOptions {
	return { env: side.env, cwd: side.dir, out: "out", taskPollMs: TASK_POLL_MS, ...extra };
}

function cliArgs(extra: readonly string[]): string[] {
	return ["run", "shop.yaml", "--out", "out", "--quiet", "--task-poll-ms", String(TASK_POLL_MS), ...extra];
}

/** One session of the run, to its end. */
async function step(side: Side, flags: readonly string[], options: Partial<RunJobFileOptions>): Promise<StepOutcome> {
	if (side.entry === "library") {
		const result: RunJobFileResult = await runJobFile(side.jobPath, libraryOptions(side, options));
		// The library's result is summary.json as written, with where its files are: nothing else.
		const { run_dir: runDir, report, ...summary } = result;
		expect(summary).toEqual(readSummary(runDir));
		expect(report === null || report === join(runDir, "report.html")).toBe(true);
		return { summary: result, code: null };
	}
	// The CLI's own main (flags, printing, exit codes) in this process: a session that is not killed needs
	// no process of its own, and ~1 s of start-up per session was most of the file's time.
	const done = await runCli(cliArgs(flags), { env: side.env, cwd: side.dir });
	if (![0, 1, 130].includes(done.code)) throw new Error(`scrapejob exited ${done.code}: ${done.stderr}`);
	return { summary: readSummary(runDirOf(side)), code: done.code };
}

/** One session in a child process, so that it can be signalled: the CLI, or a script calling `runJobFile`. */
function startKillable(side: Side, flags: readonly string[], options: Partial<RunJobFileOptions>): ChildProcess {
	if (side.entry === "cli") return spawnCli(cliArgs(flags), side.env, side.dir).child;
	const script = join(side.dir, "run-library.mjs");
	writeFileSync(
		script,
		[
			`import { runJobFile } from ${JSON.stringify(DIST_INDEX)};`,
			"const controller = new AbortController();",
			'process.once("SIGINT", () => controller.abort());',
			"const { job, ...options } = JSON.parse(process.argv[2]);",
			"const result = await runJobFile(job, { ...options, signal: controller.signal });",
			"process.stdout.write(JSON.stringify({ stopped_reason: result.stopped_reason }));",
			"process.exit(0);",
			"",
		].join("\n"),
	);
	const options_ = { job: side.jobPath, ...libraryOptions(side, options) };
	return spawn(process.execPath, [script, JSON.stringify(options_)], {
		env: { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR },
		cwd: side.dir,
		stdio: ["ignore", "pipe", "pipe"],
	});
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
	let stderr = "";
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	child.stdout?.resume();
	return new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stderr })));
}

/**
 * Cells at a time: a few overlap (most of a cell is a process starting or a fetch's latency), not more,
 * so that a starved machine does not stretch a kill's wait. Waiting for a turn is part of a test's time.
 */
const CELLS_AT_ONCE = 3;
let running = 0;
const turns: Array<() => void> = [];
async function takeTurn(): Promise<() => void> {
	if (running >= CELLS_AT_ONCE) await new Promise<void>((resolve) => turns.push(resolve));
	running += 1;
	return () => {
		running -= 1;
		turns.shift()?.();
	};
}

function lineCount(path: string): number {
	return existsSync(path) ? readFileSync(path, "utf8").split("\n").length - 1 : 0;
}

/** Polls `ready` (synchronous, so the emulator in this process does not move while it looks) until true. */
async function until(ready: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!ready()) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 5));
	}
}

/**
 * The SIGKILL instant: every task the emulator handed out is in the journal, every fetch it has taken is
 * answered (none is half-way to a task id), and its slots are all held by tasks still processing — so
 * the run cannot send another fetch before the kill lands (its completions wait on this event loop).
 */
function safeToKill(side: Side, runDir: string): boolean {
	const records = lineCount(join(runDir, "results.jsonl"));
	if (records < 1) return false;
	const journal = existsSync(join(runDir, "journal.jsonl")) ? readFileSync(join(runDir, "journal.jsonl"), "utf8") : "";
	const fetches = side.emulator.ledger.byEndpoint("realtime").slice(side.ledgerFrom);
	if (fetches.some((entry) => entry.finishedAt === null)) return false;
	const tasks = fetches.filter((entry) => entry.taskId !== undefined);
	if (!tasks.every((entry) => journal.includes(`"task_id":"${entry.taskId}"`))) return false;
	return tasks.filter((entry) => entry.taskStatus === "processing").length === CONCURRENCY;
}

/** The run under test in one mode, for one entry point: its last session's outcome, and what the stop left. */
async function runCell(
	side: Side,
	mode: Mode,
	feature: Feature,
): Promise<{ final: StepOutcome; stopped: StepOutcome | null }> {
	const { flags, options } = feature;
	if (mode === "fresh") return { final: await step(side, flags, options), stopped: null };
	if (mode === "budget") {
		const stopped = await step(side, [...flags, "--max-credits", String(feature.budget)], {
			...options,
			maxCredits: feature.budget,
		});
		// A plain --resume keeps the run's budget: it stops again at once, having paid nothing more.
		const before = chargedSince(side);
		const again = await step(side, ["--resume"], { resume: true });
		expect(again.summary.stopped_reason).toBe("budget_exhausted");
		expect(chargedSince(side)).toBe(before);
		const final = await step(side, ["--resume", "--max-credits", "1000"], { resume: true, maxCredits: 1000 });
		return { final, stopped };
	}
	const child = startKillable(side, flags, options);
	const ended = exited(child);
	const jobDir = join(side.dir, "out", "shop");
	const runDir = () => {
		const names = existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName).sort() : [];
		const last = names.at(-1);
		return last === undefined || last === side.setupRun ? null : join(jobDir, last);
	};
	if (mode === "sigint") {
		await until(() => {
			const dir = runDir();
			return dir !== null && lineCount(join(dir, "results.jsonl")) >= 2;
		}, `${side.entry}: 2 records`);
		child.kill("SIGINT");
	} else {
		await until(() => {
			const dir = runDir();
			if (dir === null || !safeToKill(side, dir)) return false;
			child.kill("SIGKILL");
			return true;
		}, `${side.entry}: a moment to SIGKILL`);
	}
	const exit = await ended;
	if (mode === "sigint") {
		if (side.entry === "cli") expect(exit.code, exit.stderr).toBe(130);
		else expect(exit.code, exit.stderr).toBe(0);
	} else expect(exit.signal).toBe("SIGKILL");
	const dir = runDir();
	if (dir === null) throw new Error("the killed run left no folder");
	const stopped =
		mode === "sigint" ? { summary: readSummary(dir), code: exit.code } : { summary: null as never, code: null };
	if (mode === "sigint") expect(stopped.summary).toMatchObject({ complete: false, stopped_reason: "interrupted" });
	// Resumed as the hint says: `--resume` alone (the run keeps what it was started with).
	const final = await step(side, ["--resume"], { resume: true });
	return { final, stopped: mode === "sigint" ? stopped : null };
}

function chargedSince(side: Side): number {
	return side.emulator.ledger
		.byEndpoint("realtime")
		.slice(side.ledgerFrom)
		.reduce((sum, entry) => sum + entry.creditsCharged, 0);
}

/** A record without what timing decides (times, durations, the account's balance at that moment). */
function comparableRecord(record: ResultRecord) {
	const {
		started_at: _s,
		finished_at: _f,
		duration_ms: _d,
		credits_remaining: _c,
		task_id,
		attempts: _a,
		...rest
	} = record as ResultRecord & Record<string, unknown>;
	return { ...rest, task: task_id !== null };
}

/** The summary without timings and run ids: the fields the two entry points must agree on. */
function comparableSummary(summary: RunSummary) {
	const { crawl, extract, changes, contract } = summary;
	return {
		complete: summary.complete,
		stopped_reason: summary.stopped_reason,
		targets: summary.targets,
		credits: summary.credits,
		retries: summary.retries,
		errors_by_kind: summary.errors_by_kind,
		resumed: summary.resumed_from !== null,
		crawl,
		extract,
		changes,
		contract: contract?.passed ?? null,
	};
}

/** The URL path of every record, sorted (the hosts are the same demo site on both sides). */
function pathsOf(records: readonly ResultRecord[]): string[] {
	return records.map((record) => new URL(record.url).pathname).sort();
}

// Cells run a few at a time: most of a cell's time is a process starting or a fetch's latency.
(process.env.MATRIX_SERIAL ? describe.each(FEATURES) : describe.concurrent.each(FEATURES))(
	"one product: $name",
	(feature) => {
		it.for<Mode>([...MODES])(
			"%s: the CLI and runJobFile end with the same records, credits and summary",
			{ timeout: 120_000 },
			async (mode: Mode, { onTestFinished }: TestContext) => {
				onTestFinished(await takeTurn());
				const site: DemoSite = await startDemoSite({ latencyMs: 0 });
				onTestFinished(() => site.close());
				const sides = await Promise.all(
					(["cli", "library"] as const).map(async (entry): Promise<Side> => {
						const emulator = await startEmulator({ scenario: scenarioFor(mode, feature) });
						onTestFinished(() => emulator.close());
						const dir = tempDir(`matrix-${entry}-`);
						const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
						const side: Side = { entry, emulator, env, dir, jobPath: join(dir, "shop.yaml"), ledgerFrom: 0 };
						if (feature.setup) {
							// The earlier run (the library's, in this process: not what the cell compares): the
							// history the run under test reads.
							writeJob(dir, "shop", feature.setup.job(site.url));
							await runJobFile(side.jobPath, libraryOptions(side, {}));
							side.setupRun = runDirOf(side).split("/").at(-1);
							side.ledgerFrom = emulator.ledger.byEndpoint("realtime").length;
						}
						writeJob(dir, "shop", feature.job(site.url));
						for (const [name, text] of Object.entries(feature.files?.(site.url) ?? {})) {
							writeFileSync(join(dir, name), text);
						}
						return side;
					}),
				);
				const outcomes = await Promise.all(sides.map((side) => runCell(side, mode, feature)));

				for (const [index, side] of sides.entries()) {
					const { final, stopped } = outcomes[index]!;
					const runDir = runDirOf(side);
					const records = readRecords(runDir);
					// Every target once, and the run ran to its end.
					expect(pathsOf(records), side.entry).toEqual(feature.expected.paths);
					expect(final.summary, side.entry).toMatchObject({ complete: true, stopped_reason: null });
					if (side.entry === "cli") expect(final.code).toBe(0);
					const total = feature.expected.total === undefined ? feature.expected.paths.length : feature.expected.total;
					expect(final.summary.targets, side.entry).toMatchObject({
						total,
						done: feature.expected.paths.length,
						remaining: total === null ? null : 0,
					});
					if (feature.expected.fresh !== undefined) expect(final.summary.targets.fresh).toBe(feature.expected.fresh);
					// Nothing paid twice: one charge per URL, and the summary and records say what the ledger charged.
					const paid = side.emulator.ledger
						.byEndpoint("realtime")
						.slice(side.ledgerFrom)
						.filter((entry) => entry.creditsCharged > 0)
						.map((entry) => entry.url);
					expect(
						paid.filter((url, index) => paid.indexOf(url) !== index),
						`${side.entry}: paid twice`,
					).toEqual([]);
					expect(final.summary.credits.used, side.entry).toBe(chargedSince(side));
					if (stopped) expect(stopped.summary.complete).toBe(false);
				}
				const [cli, library] = outcomes;
				const [cliSide, librarySide] = sides;
				// The same records, byte for byte but for timings, on both sides; the same summary; the same credits.
				const cliRecords = readRecords(runDirOf(cliSide!)).map(comparableRecord);
				const libraryRecords = readRecords(runDirOf(librarySide!)).map(comparableRecord);
				const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
				expect(cliRecords.sort(byId)).toEqual(libraryRecords.sort(byId));
				expect(comparableSummary(cli!.final.summary)).toEqual(comparableSummary(library!.final.summary));
				expect(chargedSince(cliSide!)).toBe(chargedSince(librarySide!));
				if (mode === "budget") {
					expect(comparableSummary(cli!.stopped!.summary)).toEqual(comparableSummary(library!.stopped!.summary));
					expect(cli!.stopped!.summary).toMatchObject({ stopped_reason: "budget_exhausted", complete: false });
					expect(cli!.stopped!.code).toBe(1);
				}
			},
		);
	},
);

/**
 * A service that echoes the key: in front of the emulator, `X-Mode-Used` says `request (key …)` and every
 * task id carries the key (polled back under that id). The emulator behind keeps the ledger.
 */
async function echoingProxy(emulator: Emulator): Promise<{ url: string; close(): Promise<void> }> {
	const key = emulator.scraperKey;
	const target = new URL(emulator.scraperUrl);
	const server = createServer((req, res) => {
		const path = (req.url ?? "/").replaceAll(`task-${key}-`, "");
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			const forward = request(
				{ host: target.hostname, port: target.port, method: req.method, path, headers: req.headers },
				(answer) => {
					const parts: Buffer[] = [];
					answer.on("data", (chunk: Buffer) => parts.push(chunk));
					answer.on("end", () => {
						let body = Buffer.concat(parts);
						const headers = { ...answer.headers };
						if (headers["x-mode-used"]) headers["x-mode-used"] = `${headers["x-mode-used"]} (key ${key})`;
						if (String(headers["content-type"]).includes("json")) {
							body = Buffer.from(
								body
									.toString("utf8")
									.replace(/"task_id":"([^"]+)"/g, `"task_id":"task-${key}-$1"`)
									.replace(/"mode_used":"([^"]+)"/g, `"mode_used":"$1 (key ${key})"`),
							);
							headers["content-length"] = String(body.length);
						}
						res.writeHead(answer.statusCode ?? 502, headers).end(body);
					});
				},
			);
			forward.on("error", () => res.destroy());
			forward.end(Buffer.concat(chunks));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}${target.pathname}`,
		close: () =>
			new Promise((resolve) => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	};
}

/** Every file under `dir` (hidden ones and page files included), as text. */
function filesUnder(dir: string): Array<{ name: string; text: string }> {
	return (readdirSync(dir, { recursive: true }) as string[])
		.map((name) => ({ name, path: join(dir, name) }))
		.filter(({ path }) => statSync(path).isFile())
		.map(({ name, path }) => ({ name, text: readFileSync(path).toString("latin1") }));
}

describe("one product: secrets", () => {
	it("a userinfo URL and a key echoed in X-Mode-Used and in task ids reach no file, through either entry point, across a SIGINT and a resume", async ({
		onTestFinished,
	}) => {
		const site = await startDemoSite({ latencyMs: 0 });
		onTestFinished(() => site.close());
		const password = "S3cretPassw0rd";
		const withCredentials = site.url.replace("http://", `http://alice:${password}@`);
		const sides = await Promise.all(
			(["cli", "library"] as const).map(async (entry): Promise<Side> => {
				// Every fetch a task (so task ids are everywhere), slow enough for the SIGINT to land mid-run.
				const emulator = await startEmulator({ scenario: { concurrency: CONCURRENCY, latency_ms: 60, timeout_ms: 5 } });
				onTestFinished(() => emulator.close());
				const proxy = await echoingProxy(emulator);
				onTestFinished(() => proxy.close());
				const dir = tempDir(`matrix-secrets-${entry}-`);
				const env = {
					SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
					SCRAPEJOB_API_URL: emulator.apiUrl,
					SCRAPEJOB_SCRAPER_URL: proxy.url,
				};
				writeJob(
					dir,
					"shop",
					[...head(), "output:", "  content: files", "targets:", ...products(withCredentials, 1, 8), ""].join("\n"),
				);
				return { entry, emulator, env, dir, jobPath: join(dir, "shop.yaml"), ledgerFrom: 0 };
			}),
		);
		await Promise.all(sides.map((side) => runCell(side, "sigint", { ...FEATURES[2]!, flags: [], options: {} })));
		const key = sides[0]!.emulator.scraperKey;
		expect(sides[1]!.emulator.scraperKey).toBe(key);
		for (const side of sides) {
			const records = readRecords(runDirOf(side));
			expect(records, side.entry).toHaveLength(8);
			// The echoes did reach the run: the mode and the task ids are recorded, with the key masked.
			const echoes = records.map((record) => ({ task_id: record.task_id, mode_used: record.mode_used }));
			expect(
				echoes.some((echo) => echo.task_id?.startsWith("task-")),
				JSON.stringify(echoes),
			).toBe(true);
			expect(
				echoes.some((echo) => echo.mode_used?.includes("(key ")),
				JSON.stringify(echoes),
			).toBe(true);
			const files = filesUnder(join(side.dir, "out"));
			expect(files.map(({ name }) => name)).toEqual(
				expect.arrayContaining([expect.stringMatching(/journal\.jsonl$/), expect.stringMatching(/run\.log$/)]),
			);
			for (const { name, text } of files) {
				expect(text, `${side.entry}: ${name}`).not.toContain(password);
				expect(text, `${side.entry}: ${name}`).not.toContain(key);
			}
		}
	}, 60_000);
});
