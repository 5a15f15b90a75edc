/**
 * `npm run bench [-- --quick --only=<row> --repeat=K --profile --keep]`: the runner against a bare
 * undici pool (the practical ceiling of this machine), both against the same emulator with a fixed
 * per-fetch latency L and concurrency C, on N targets (issue #4).
 *
 * One server process (emulator + demo site) per scenario and one process per measured client, run
 * one after the other in ABBA order (bare, runner, runner, bare), so that no process's CPU or memory
 * counts against another's. Prints one table and a verdict per target, and writes
 * `bench/results/latest.json` (git-ignored).
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { createReadStream, existsSync, readFileSync, rmSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { benchCrawl, benchCrawlFeed, formatCrawlFeedRow, formatCrawlRow } from "./crawl-bench.js";
import { benchEconomics, formatEconomicsRow } from "./economics-bench.js";
import { benchExtract, formatExtractRow } from "./extract-bench.js";
import { benchFleet, formatFleetRow } from "./fleet-bench.js";
import { benchFleetKills, formatFleetKillsRow } from "./fleet-kills-bench.js";
import { benchHistory, formatHistoryRow } from "./history-bench.js";
import { jsonText } from "./json-text.js";
import { benchPeers, formatPeersRow } from "./peers-bench.js";
import { summarizeProfile } from "./profile-top.js";
import type { ClientConfig, ClientReport, ServeCommand, ServeConfig, ServeMessage } from "./protocol.js";
import { benchReextract, formatReextractRow } from "./reextract-bench.js";
import { benchReport, formatReportRow } from "./report-bench.js";
import { benchShards, formatShardsRow } from "./shards-bench.js";

interface Scenario {
	/** Row name for `--only`. */
	readonly name: string;
	/** What the row is there to show. */
	readonly purpose: string;
	readonly targets: number;
	readonly concurrency: number;
	readonly latencyMs: number;
	/**
	 * Whether the CPU target applies: at L = 100 ms a fresh process's CPU per target is mostly fixed
	 * costs and cold (unoptimized) code — the bare pool itself needs ~0.4 ms there.
	 */
	readonly judgeCpu: boolean;
	/** Runs of each client, when not `--repeat` (the 1M row runs once each: minutes per run). */
	readonly repeat?: number;
	/** The runner's job extracts three fields a page (`extract:`); the bare pool only fetches. */
	readonly extract?: boolean;
}

const SCENARIOS: readonly Scenario[] = [
	{ name: "latency", purpose: "wall time", targets: 2_000, concurrency: 20, latencyMs: 100, judgeCpu: false },
	{
		name: "cpu",
		purpose: "CPU per target",
		targets: 20_000,
		concurrency: 50,
		latencyMs: 2,
		judgeCpu: true,
		// ~5 s a run, and this machine's speed drifts by ±15 % between minutes: the fastest of four
		// runs each (ABBAABBA) is steadier than of two (the same code measured 1.01× and 1.18× in two).
		repeat: 4,
	},
	{ name: "memory", purpose: "memory", targets: 200_000, concurrency: 50, latencyMs: 1, judgeCpu: true },
	{
		name: "scale",
		purpose: "memory flat to 1M",
		targets: 1_000_000,
		concurrency: 50,
		latencyMs: 1,
		judgeCpu: true,
		repeat: 1,
	},
	{
		name: "scale-extract",
		purpose: "memory flat to 1M with extract: and the job store",
		targets: 1_000_000,
		concurrency: 50,
		latencyMs: 1,
		// Each page parsed in the page workers: not the list run's CPU target.
		judgeCpu: false,
		repeat: 1,
		extract: true,
	},
];

/** Targets of the issue (#4). */
const TARGETS = { wallRatio: 1.05, cpuMsPerTarget: 0.5, peakRssMb: 150, rssGrowth: 1.15 } as const;
/** Requests sent by an unmeasured bare pass first, so that both measured clients meet a warm server. */
const WARM_UP_TARGETS = 1_000;
/** Longest a measured client may take before the bench gives up on it, ms (the 1M row takes ~5 min on a busy 2-core machine). */
const CLIENT_TIMEOUT_MS = 900_000;
/** Per target past that, ms: `--targets=10000000` runs for tens of minutes a client. */
const CLIENT_TIMEOUT_MS_PER_TARGET = 1;
/**
 * `BENCH_NODE_ARGS="--trace-gc …"`: Node options given to every measured client (both), to try a V8
 * flag or trace one; a flag the runner would set itself then stays the user's (`src/cli/heap-growth.ts`).
 */
const CLIENT_NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg !== "");
const SERVER_START_TIMEOUT_MS = 30_000;
/** Runs of each client per row. */
const DEFAULT_REPEAT = 2;
/** Other work on the machine (in cores) above which a run's numbers are flagged as disturbed. */
const BUSY_MACHINE_CORES = 0.2;
const MB = 1024 * 1024;

const HERE = dirname(fileURLToPath(import.meta.url));

interface Options {
	readonly quick: boolean;
	/** Runs of each client per row, in ABBA order; the row shows each client's fastest. */
	readonly repeat: number;
	readonly only: string | null;
	readonly profile: boolean;
	readonly keep: boolean;
	/** `--repeat` was given: it wins over a row's own number of runs. */
	readonly repeatGiven: boolean;
	/** `--crawl-pages=N`: the crawl row's generated site size (default 100,000; `--quick` 10,000). */
	readonly crawlPages: number | null;
	/** `--targets=N`: the rows' target count instead of their own (`--only=scale --targets=10000000`). */
	readonly targets: number | null;
	/** `--node=PATH`: Node executables both clients also run under, beside the bench's own Node. */
	readonly nodes: readonly string[];
}

function parseArgs(argv: readonly string[]): Options {
	let quick = false;
	let only: string | null = null;
	let profile = false;
	let keep = false;
	let repeat = DEFAULT_REPEAT;
	let repeatGiven = false;
	let crawlPages: number | null = null;
	let targets: number | null = null;
	const nodes: string[] = [];
	for (const arg of argv) {
		if (arg === "--quick") quick = true;
		else if (arg === "--profile") profile = true;
		else if (arg === "--keep") keep = true;
		else if (arg.startsWith("--node=")) {
			const path = arg.slice("--node=".length);
			if (path === "") throw new Error("--node needs the path of a node executable, e.g. --node=/usr/bin/node");
			nodes.push(path);
		} else if (arg.startsWith("--targets=")) {
			targets = Number(arg.slice("--targets=".length));
			if (!Number.isSafeInteger(targets) || targets < 1)
				throw new Error(`--targets must be a positive integer, got ${arg}`);
		} else if (arg.startsWith("--crawl-pages=")) {
			crawlPages = Number(arg.slice("--crawl-pages=".length));
			if (!Number.isInteger(crawlPages) || crawlPages < 1)
				throw new Error(`--crawl-pages must be a positive integer, got ${arg}`);
		} else if (arg.startsWith("--repeat=")) {
			repeat = Number(arg.slice("--repeat=".length));
			repeatGiven = true;
			if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a positive integer, got ${arg}`);
		} else if (arg.startsWith("--only=")) {
			const value = arg.slice("--only=".length);
			if (
				value === REPORT_ROW ||
				value === EXTRACT_ROW ||
				value === CRAWL_ROW ||
				value === HISTORY_ROW ||
				value === REEXTRACT_ROW ||
				value === SHARDS_ROW ||
				value === FLEET_ROW ||
				value === FLEET_KILLS_ROW ||
				value === ECONOMICS_ROW ||
				value === PEERS_ROW
			) {
				only = value;
				continue;
			}
			const byIndex = SCENARIOS[Number(value) - 1];
			const scenario = byIndex ?? SCENARIOS.find((s) => s.name === value);
			if (!scenario) {
				throw new Error(
					`--only: no row ${value}; rows: ${[...SCENARIOS.map((s) => s.name), REPORT_ROW, EXTRACT_ROW, CRAWL_ROW, HISTORY_ROW, REEXTRACT_ROW, SHARDS_ROW, FLEET_ROW, FLEET_KILLS_ROW, ECONOMICS_ROW, PEERS_ROW].join(", ")}`,
				);
			}
			only = scenario.name;
		} else if (arg === "--help" || arg === "-h") {
			process.stdout.write(
				"usage: npm run bench -- [--quick] [--only=latency|cpu|memory|scale|scale-extract|report|extract|crawl|history|reextract|shards|economics|peers|1|2|3|4|5] [--targets=N] [--repeat=K] [--node=PATH] [--profile] [--keep] [--crawl-pages=N]\n" +
					"  --quick    N/10 targets per row (peers: N/4, two rounds)\n" +
					`  --repeat   runs of each client per row, in ABBA order; the fastest is shown (default ${DEFAULT_REPEAT}; the cpu row 4, the scale row 1)\n` +
					"  --profile  run each client's first run under --cpu-prof; print the top functions\n" +
					"  --keep     keep the temporary folders (job, URLs, outputs)\n" +
					`  --node     also run both clients under this Node (${MIN_NODE.join(".")} or later), alternated with the bench's own (${process.version}); repeatable\n` +
					"  --targets  the rows' N instead of their own (--only=scale --targets=10000000: ten million list targets, tens of minutes a client)\n" +
					"  --crawl-pages  the crawl row's generated site size (default 100000; 1000000 discovers ~2.2M URLs)\n",
			);
			process.exit(0);
		} else throw new Error(`unknown argument ${arg} (try --help)`);
	}
	return { quick, repeat, only, profile, keep, repeatGiven, crawlPages, targets, nodes };
}

/** The package's root: the first folder above this file that has a package.json (works from the build folder). */
function packageRoot(): string {
	for (let dir = HERE; dir !== dirname(dir); dir = dirname(dir)) {
		// The compiled bench's folder has a package.json of its own (an ES module scope, no name): passed over.
		if (existsSync(join(dir, "package.json")) && packageName(join(dir, "package.json")) === "scrapejob") return dir;
	}
	return process.cwd();
}

function packageName(path: string): unknown {
	try {
		return (JSON.parse(readFileSync(path, "utf8")) as { name?: unknown }).name;
	} catch {
		return undefined;
	}
}

// --- child processes -------------------------------------------------------------------------------

const live = new Set<ChildProcess>();
/** Temporary folders to remove if the bench is stopped. */
const temporary = new Set<string>();

function killAll(): void {
	for (const child of live) child.kill("SIGKILL");
	live.clear();
	for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
	temporary.clear();
}

process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
	process.on(signal, () => {
		killAll();
		process.exit(130);
	});
}

interface Child {
	readonly process: ChildProcess;
	/** The last few KB of the child's stdout and stderr, for error messages. */
	output(): string;
	/** Resolves with the next message of this type; rejects if the child exits first or time runs out. */
	next<T extends { type: string }>(type: T["type"], timeoutMs: number): Promise<T>;
	exited(): Promise<number | null>;
}

function startChild(
	script: string,
	config: ServeConfig | ClientConfig,
	options: { env?: NodeJS.ProcessEnv; execArgv?: string[]; execPath?: string } = {},
): Child {
	const child = fork(join(HERE, script), [JSON.stringify(config)], {
		stdio: ["ignore", "pipe", "pipe", "ipc"],
		env: options.env ?? process.env,
		execArgv: options.execArgv ?? [],
		...(options.execPath !== undefined ? { execPath: options.execPath } : {}),
	});
	live.add(child);
	let output = "";
	const keep = (chunk: Buffer) => {
		output = (output + chunk.toString("utf8")).slice(-8000);
	};
	child.stdout?.on("data", keep);
	child.stderr?.on("data", keep);
	const exit = new Promise<number | null>((resolve) => {
		child.once("exit", (code) => {
			live.delete(child);
			resolve(code);
		});
	});
	return {
		process: child,
		output: () => output,
		exited: () => exit,
		next<T extends { type: string }>(type: T["type"], timeoutMs: number) {
			return new Promise<T>((resolve, reject) => {
				const onMessage = (message: { type?: string }) => {
					if (message.type !== type) return;
					cleanUp();
					resolve(message as T);
				};
				const onExit = (code: number | null) => {
					cleanUp();
					reject(new Error(`${script} exited (code ${code}) before sending "${type}":\n${output}`));
				};
				const timer = setTimeout(() => {
					cleanUp();
					child.kill("SIGKILL");
					reject(new Error(`${script} sent no "${type}" within ${timeoutMs / 1000} s:\n${output}`));
				}, timeoutMs);
				const cleanUp = () => {
					clearTimeout(timer);
					child.off("message", onMessage);
					child.off("exit", onExit);
				};
				child.on("message", onMessage);
				child.once("exit", onExit);
			});
		},
	};
}

type Ready = Extract<ServeMessage, { type: "ready" }>;
type Stats = Extract<ServeMessage, { type: "stats" }>;

async function serverStats(server: Child): Promise<Stats> {
	const reply = server.next<Stats>("stats", 10_000);
	server.process.send({ type: "stats" } satisfies ServeCommand);
	return reply;
}

/** Run a client to its end; `lifetimeMs` is from fork to exit. */
async function runClient(
	script: string,
	config: ClientConfig,
	options: { env?: NodeJS.ProcessEnv; execArgv?: string[]; execPath?: string; targets?: number } = {},
): Promise<{ report: ClientReport; lifetimeMs: number }> {
	const started = performance.now();
	const child = startChild(script, config, options);
	const timeoutMs = Math.max(CLIENT_TIMEOUT_MS, (options.targets ?? 0) * CLIENT_TIMEOUT_MS_PER_TARGET);
	const report = await child.next<ClientReport>("report", timeoutMs);
	const code = await child.exited();
	if (code !== 0) throw new Error(`${script} exited with code ${code}:\n${child.output()}`);
	return { report, lifetimeMs: performance.now() - started };
}

// --- checking what the clients wrote ------------------------------------------------------------

async function forEachLine(file: string, onLine: (line: string, index: number) => void): Promise<number> {
	const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
	let count = 0;
	for await (const line of lines) {
		if (line === "") continue;
		onLine(line, count);
		count += 1;
	}
	return count;
}

/**
 * The pages seen, one bit each (`/page/<n>`, n from 1 to N): ten million URLs in 1.25 MB, where a set
 * of their strings took gigabytes. Returns how many were seen for the first time.
 */
function createPageBits(pages: number): { see(url: string): boolean; readonly distinct: number } {
	const bits = new Uint8Array((pages >> 3) + 1);
	let distinct = 0;
	return {
		see(url) {
			const page = Number(url.slice(url.lastIndexOf("/") + 1));
			if (!Number.isSafeInteger(page) || page < 1 || page > pages) return false;
			const mask = 1 << (page & 7);
			if ((bits[page >> 3]! & mask) !== 0) return false;
			bits[page >> 3]! |= mask;
			distinct += 1;
			return true;
		},
		get distinct() {
			return distinct;
		},
	};
}

/** Every target once, every answer a 200. */
async function checkBare(file: string, expected: number): Promise<void> {
	const urls = createPageBits(expected);
	let bad = "";
	const count = await forEachLine(file, (line) => {
		const record = JSON.parse(line) as { url: string; status: number };
		urls.see(record.url);
		if (record.status !== 200 && !bad) bad = line;
	});
	if (bad) throw new Error(`bare client: an answer was not 200: ${bad}`);
	if (count !== expected || urls.distinct !== expected) {
		throw new Error(`bare client: ${count} lines, ${urls.distinct} distinct URLs; expected ${expected}`);
	}
}

/**
 * Exit code 0, one results.jsonl under the out folder with one `ok` record per target. Returns the
 * time the runner spent before its run started (validation, account look-up, counting pass), ms.
 */
async function checkRunner(report: ClientReport, outDir: string, expected: number, extract: boolean): Promise<number> {
	if (report.exitCode !== 0) throw new Error(`runner exited with code ${report.exitCode}:\n${report.output ?? ""}`);
	const jobDir = join(outDir, "bench");
	const runs: string[] = [];
	for (const entry of await readdir(jobDir)) {
		if ((await stat(join(jobDir, entry))).isDirectory()) runs.push(entry);
	}
	const [run] = runs;
	if (runs.length !== 1 || run === undefined) throw new Error(`runner: expected one run folder in ${jobDir}`);
	const file = join(jobDir, run, "results.jsonl");
	// One record per page, each page once: N distinct pages are N distinct targets (one set of options).
	const pages = createPageBits(expected);
	let bad = "";
	const count = await forEachLine(file, (line) => {
		const record = JSON.parse(line) as { url: string; status: string; data?: Record<string, unknown> };
		pages.see(record.url);
		if (record.status !== "ok" && !bad) bad = line;
		if (extract && record.data?.title == null && !bad) bad = line;
	});
	if (bad) throw new Error(`runner: a record is not ok${extract ? " or has no extracted title" : ""}: ${bad}`);
	if (count !== expected || pages.distinct !== expected) {
		throw new Error(`runner: ${count} records, ${pages.distinct} distinct pages in ${file}; expected ${expected}`);
	}
	const summary = JSON.parse(await readFile(join(jobDir, run, "summary.json"), "utf8")) as { started_at: string };
	return Date.parse(summary.started_at) - report.startEpochMs;
}

// --- one scenario -------------------------------------------------------------------------------------

type ClientName = "bare" | "runner";

/** A Node the clients run under: its executable and version (`v24.11.0`). */
interface NodeUnderTest {
	readonly path: string;
	readonly version: string;
}

/** The oldest Node scrapejob runs on (package.json `engines`): the runner client needs its job store's addon. */
const MIN_NODE = [22, 12] as const;

/** The bench's own Node, then each `--node`, checked to be one scrapejob runs on. */
function nodesUnderTest(paths: readonly string[]): NodeUnderTest[] {
	const nodes: NodeUnderTest[] = [{ path: process.execPath, version: process.version }];
	for (const path of paths) {
		const probe = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 30_000 });
		const version = probe.stdout?.trim() ?? "";
		const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
		if (probe.status !== 0 || !/^v\d+\.\d+\.\d+/.test(version))
			throw new Error(
				`--node=${path}: not a node executable (${probe.error?.message ?? (probe.stderr.trim() || `exit ${probe.status}`)})`,
			);
		if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1]))
			throw new Error(`--node=${path} is Node ${version}; scrapejob needs ${MIN_NODE.join(".")} or later`);
		if (!nodes.some((node) => node.version === version)) nodes.push({ path, version });
	}
	return nodes;
}

/** One measured run of one client. */
interface Run {
	readonly client: ClientName;
	readonly node: string;
	readonly report: ClientReport;
	/** CPU of the server process (emulator + demo site) during the run, ms. */
	readonly serverCpuMs: number;
	/** CPU the rest of the machine used during the run (not this client, not the server), in cores. */
	readonly otherCores: number | null;
	/** Connections the emulator accepted during the run: a client's sockets (a steady run opens C, once). */
	readonly connections: number;
	/** Runner only: from `main()` to the start of the run proper (validation, account look-up, counting pass), ms. */
	readonly setupMs: number | null;
}

interface Row {
	readonly scenario: string;
	readonly client: ClientName;
	/** The Node it ran under (`v24.11.0`). */
	readonly node: string;
	readonly targets: number;
	readonly concurrency: number;
	readonly latencyMs: number;
	/** The run shown: the one with the lowest wall time of `runs`. */
	readonly wallMs: number;
	/** (N·L/C) / wall. */
	readonly efficiency: number;
	readonly cpuMs: number;
	readonly cpuMsPerTarget: number;
	readonly startupCpuMs: number;
	/** Highest peak RSS over all runs of this client and row. */
	readonly peakRssMb: number;
	readonly baseRssMb: number;
	readonly peakHeapTotalMb: number;
	readonly peakExternalMb: number;
	readonly serverCpuMsPerTarget: number;
	readonly otherCores: number | null;
	/** Connections the emulator accepted during the run shown. */
	readonly connections: number;
	readonly setupMs: number | null;
	/** runner wall / bare wall, best runs (runner rows only). */
	readonly wallRatio: number | null;
	/** Every run's wall time, in the order they ran, ms. */
	readonly wallsMs: readonly number[];
	/** Every run's CPU per target and the server's for it, in the order they ran, ms: an outlier shows which side it was on. */
	readonly cpuMsPerTargetByRun: readonly number[];
	readonly serverCpuMsPerTargetByRun: readonly number[];
}

function jobYaml(concurrency: number, extract: boolean): string {
	return [
		"name: bench",
		`concurrency: ${concurrency}`,
		"defaults:",
		"  mode: request",
		"sources:",
		"  - file: urls.txt",
		// Three fields of the demo site's generic page (`/page/<n>`): its heading, first paragraph and next link.
		...(extract ? ["extract:", "  title: h1", "  intro: p", "  next: {css: p a, attr: href, type: url}"] : []),
		"output:",
		"  formats: [jsonl]",
		"  content: none",
		"",
	].join("\n");
}

function runnerEnv(ready: Ready): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {};
	for (const [name, value] of Object.entries(process.env)) {
		if (!name.startsWith("SCRAPEJOB_")) env[name] = value;
	}
	return { ...env, SCRAPEJOB_ACCOUNT_KEY: ready.accountKey, SCRAPEJOB_API_URL: ready.apiUrl, NO_COLOR: "1" };
}

/** Busy CPU time of the whole machine so far, ms (Linux `/proc/stat`); null elsewhere. */
async function machineBusyMs(): Promise<number | null> {
	try {
		const [line = ""] = (await readFile("/proc/stat", "utf8")).split("\n", 1);
		const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
			.trim()
			.split(/\s+/)
			.map(Number);
		// USER_HZ is 100 on every Linux that Node supports.
		return (user + nice + system + irq + softirq + steal) * 10;
	} catch {
		return null;
	}
}

/**
 * Clients in ABBA order (bare, runner, runner, bare, …), each Node's pair in turn and the whole round
 * reversed every other time, so that drift in the machine's speed evens out.
 */
function runOrder(
	repeat: number,
	nodes: readonly NodeUnderTest[],
): Array<{ readonly client: ClientName; readonly node: NodeUnderTest }> {
	const round = nodes.flatMap((node) => (["bare", "runner"] as const).map((client) => ({ client, node })));
	const order: Array<{ client: ClientName; node: NodeUnderTest }> = [];
	for (let i = 0; i < repeat; i++) order.push(...(i % 2 === 0 ? round : [...round].reverse()));
	return order;
}

async function runScenario(
	scenario: Scenario,
	targets: number,
	options: Options,
	root: string,
	nodes: readonly NodeUnderTest[],
): Promise<Row[]> {
	const { concurrency, latencyMs } = scenario;
	const dir = await mkdtemp(join(tmpdir(), `scrapejob-bench-${scenario.name}-`));
	if (!options.keep) temporary.add(dir);
	const server = startChild("serve.js", { concurrency, latencyMs } satisfies ServeConfig);
	try {
		const ready = await server.next<Ready>("ready", SERVER_START_TIMEOUT_MS);
		const urlsFile = join(dir, "urls.txt");
		// A chunk at a time: ten million URLs held as strings would take gigabytes.
		await writeFile(urlsFile, "");
		for (let first = 1; first <= targets; first += 100_000) {
			const urls: string[] = [];
			for (let page = first; page < first + 100_000 && page <= targets; page++)
				urls.push(`${ready.siteUrl}/page/${page}\n`);
			await appendFile(urlsFile, urls.join(""));
		}
		const jobFile = join(dir, "job.yaml");
		await writeFile(jobFile, jobYaml(concurrency, scenario.extract === true));
		const realtimeUrl = `${ready.scraperUrl}/scraper/realtime`;
		const bareConfig = (outFile: string, limit?: number): ClientConfig => ({
			urlsFile,
			concurrency,
			realtimeUrl,
			scraperKey: ready.scraperKey,
			outFile,
			...(limit !== undefined ? { limit } : {}),
		});
		const profileDir = join(root, "bench", "results", "profiles");
		if (options.profile) await mkdir(profileDir, { recursive: true });
		const profileName = (client: ClientName, node: NodeUnderTest) =>
			`${client}-${scenario.name}${nodes.length > 1 ? `-${node.version}` : ""}.cpuprofile`;

		progress(`${scenario.name} (${scenario.purpose}): N=${targets} C=${concurrency} L=${latencyMs} ms — warm-up`);
		await runClient("client-bare.js", bareConfig(join(dir, "warm-up.jsonl"), Math.min(targets, WARM_UP_TARGETS)));

		const runs: Run[] = [];
		const repeat = options.repeatGiven ? options.repeat : (scenario.repeat ?? options.repeat);
		const order = runOrder(repeat, nodes);
		for (const [index, { client, node }] of order.entries()) {
			const under = nodes.length > 1 ? `, Node ${node.version}` : "";
			progress(`${scenario.name}: ${client}${under} (run ${index + 1} of ${order.length})`);
			// Only the first run of each client is profiled: the profile file would be overwritten anyway.
			const profiled = options.profile && !runs.some((run) => run.client === client && run.node === node.version);
			const execArgv = [
				...CLIENT_NODE_ARGS,
				...(profiled ? ["--cpu-prof", "--cpu-prof-dir", profileDir, "--cpu-prof-name", profileName(client, node)] : []),
			];
			const execPath = node.path;
			const out = join(dir, `${client}-${index}`);
			const before = await serverStats(server);
			const busyBefore = await machineBusyMs();
			const { report, lifetimeMs } =
				client === "bare"
					? await runClient("client-bare.js", bareConfig(`${out}.jsonl`), { execArgv, execPath, targets })
					: await runClient(
							"client-runner.js",
							{ urlsFile, concurrency, jobFile, outDir: out },
							{ env: runnerEnv(ready), execArgv, execPath, targets },
						);
			const busyAfter = await machineBusyMs();
			const after = await serverStats(server);
			let setupMs: number | null = null;
			if (client === "bare") await checkBare(`${out}.jsonl`, targets);
			else setupMs = await checkRunner(report, out, targets, scenario.extract === true);
			// Outputs of 200,000 targets are large; what had to be checked has been.
			if (!options.keep) await rm(client === "bare" ? `${out}.jsonl` : out, { recursive: true, force: true });
			const serverCpuMs = after.cpuMs - before.cpuMs;
			// The busy time spans the client's whole life, start-up and exit included.
			const otherCores =
				busyBefore === null || busyAfter === null
					? null
					: Math.max(0, busyAfter - busyBefore - report.processCpuMs - serverCpuMs) / lifetimeMs;
			runs.push({
				client,
				node: node.version,
				report,
				serverCpuMs,
				otherCores,
				setupMs,
				connections: after.connections - before.connections,
			});
			if (profiled) {
				const file = join(profileDir, profileName(client, node));
				process.stdout.write(
					`\n${client} client${under}, ${scenario.name} (${file}):\n${await summarizeProfile(file, 15)}\n`,
				);
			}
		}

		const row = (client: ClientName, node: string, wallRatio: number | null): Row => {
			const mine = runs.filter((run) => run.client === client && run.node === node);
			const best = mine.reduce((a, b) => (b.report.wallMs < a.report.wallMs ? b : a));
			const { report } = best;
			const peak = (pick: (report: ClientReport) => number) => Math.max(...mine.map((run) => pick(run.report))) / MB;
			return {
				scenario: scenario.name,
				client,
				node,
				targets,
				concurrency,
				latencyMs,
				wallMs: report.wallMs,
				efficiency: (targets * latencyMs) / concurrency / report.wallMs,
				cpuMs: report.cpuMs,
				cpuMsPerTarget: report.cpuMs / targets,
				startupCpuMs: report.startupCpuMs,
				peakRssMb: peak((r) => r.peakRssBytes),
				baseRssMb: report.baseRssBytes / MB,
				peakHeapTotalMb: peak((r) => r.peakHeapTotalBytes),
				peakExternalMb: peak((r) => r.peakExternalBytes),
				serverCpuMsPerTarget: best.serverCpuMs / targets,
				otherCores: best.otherCores,
				connections: best.connections,
				setupMs: best.setupMs,
				wallRatio,
				wallsMs: mine.map((run) => run.report.wallMs),
				cpuMsPerTargetByRun: mine.map((run) => run.report.cpuMs / targets),
				serverCpuMsPerTargetByRun: mine.map((run) => run.serverCpuMs / targets),
			};
		};
		return nodes.flatMap(({ version }) => {
			const bare = row("bare", version, null);
			const runner = row("runner", version, null);
			return [bare, { ...runner, wallRatio: runner.wallMs / bare.wallMs }];
		});
	} finally {
		if (server.process.connected) server.process.send({ type: "close" } satisfies ServeCommand);
		const closed = await Promise.race([server.exited(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
		if (closed === undefined) server.process.kill("SIGKILL");
		if (options.keep) progress(`${scenario.name}: kept ${dir}`);
		else {
			await rm(dir, { recursive: true, force: true });
			temporary.delete(dir);
		}
	}
}

// --- report ------------------------------------------------------------------------------------------

function progress(message: string): void {
	process.stderr.write(`bench: ${message}\n`);
}

function table(rows: readonly Row[]): string {
	const columns: ReadonlyArray<readonly [string, (row: Row) => string]> = [
		["row", (row) => row.scenario],
		["client", (row) => row.client],
		...(new Set(rows.map((row) => row.node)).size > 1 ? [["node", (row: Row) => row.node] as const] : []),
		["N", (row) => row.targets.toLocaleString("en-US")],
		["C", (row) => String(row.concurrency)],
		["L ms", (row) => String(row.latencyMs)],
		["wall s", (row) => (row.wallMs / 1000).toFixed(2)],
		["eff %", (row) => (row.efficiency * 100).toFixed(1)],
		["CPU ms/target", (row) => row.cpuMsPerTarget.toFixed(3)],
		["peak RSS MB", (row) => row.peakRssMb.toFixed(1)],
		["heap MB", (row) => row.peakHeapTotalMb.toFixed(1)],
		["server CPU ms/target", (row) => row.serverCpuMsPerTarget.toFixed(3)],
		["other load", (row) => (row.otherCores === null ? "?" : row.otherCores.toFixed(2))],
		["sockets", (row) => String(row.connections)],
		["runner/bare wall", (row) => (row.wallRatio === null ? "" : `${row.wallRatio.toFixed(3)}×`)],
	];
	const header = columns.map(([title]) => title);
	const body = rows.map((row) => columns.map(([, cell]) => cell(row)));
	const widths = header.map((title, i) => Math.max(title.length, ...body.map((cells) => (cells[i] ?? "").length)));
	const left = (i: number) => i < columns.findIndex(([title]) => title === "N");
	const line = (cells: readonly string[]) =>
		`| ${cells.map((cell, i) => (left(i) ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(" | ")} |`;
	const rule = `|${widths.map((width, i) => (left(i) ? `:${"-".repeat(width + 1)}` : `${"-".repeat(width + 1)}:`)).join("|")}|`;
	return [line(header), rule, ...body.map(line)].join("\n");
}

interface Verdict {
	readonly target: string;
	readonly pass: boolean | null;
	readonly detail: string;
}

function verdicts(rows: readonly Row[]): Verdict[] {
	// The targets are judged on the bench's own Node; a `--node` is there to compare with.
	const runners = rows.filter((row) => row.client === "runner" && row.node === process.version);
	if (runners.length === 0) return [];
	const list = (format: (row: Row) => string) => runners.map((row) => `${row.scenario} ${format(row)}`).join(", ");
	const wall: Verdict = {
		target: `wall ≤ ${TARGETS.wallRatio}× the bare pool's`,
		pass: runners.every((row) => (row.wallRatio ?? Number.POSITIVE_INFINITY) <= TARGETS.wallRatio),
		detail: list((row) => `${row.wallRatio?.toFixed(3)}×`),
	};
	const judged = runners.filter((row) => SCENARIOS.find((scenario) => scenario.name === row.scenario)?.judgeCpu);
	const cpu: Verdict = {
		target: `CPU ≤ ${TARGETS.cpuMsPerTarget} ms/target (rows cpu, memory, scale)`,
		pass: judged.length === 0 ? null : judged.every((row) => row.cpuMsPerTarget <= TARGETS.cpuMsPerTarget),
		detail: judged.map((row) => `${row.scenario} ${row.cpuMsPerTarget.toFixed(3)} ms`).join(", ") || "not run",
	};
	const rss: Verdict = {
		target: `peak RSS ≤ ${TARGETS.peakRssMb} MB`,
		pass: runners.every((row) => row.peakRssMb <= TARGETS.peakRssMb),
		detail: list((row) => `${row.peakRssMb.toFixed(1)} MB`),
	};
	// Flat: the same C at 10× the targets must not need much more memory.
	const small = runners.find((row) => row.scenario === "cpu");
	// The largest row that ran: scale (1M) in a full bench, else memory (200k).
	const large = runners.find((row) => row.scenario === "scale") ?? runners.find((row) => row.scenario === "memory");
	const flat: Verdict =
		small && large
			? {
					target: `RSS flat as N grows (≤ ${TARGETS.rssGrowth}× from N=${small.targets} to N=${large.targets})`,
					pass: large.peakRssMb <= small.peakRssMb * TARGETS.rssGrowth,
					detail: `${small.peakRssMb.toFixed(1)} → ${large.peakRssMb.toFixed(1)} MB (${(large.peakRssMb / small.peakRssMb).toFixed(2)}×)`,
				}
			: { target: "RSS flat as N grows", pass: null, detail: "needs row cpu and row memory or scale" };
	return [wall, cpu, rss, flat];
}

/**
 * runner/bare wall of each pair of runs that ran next to each other (the i-th run of each client: ABBA
 * order makes them neighbours), and their median. This machine's speed drifts by ±15 % between
 * minutes; a pair shares the drift, the two fastest runs of a row need not.
 */
function pairedRatios(rows: readonly Row[]): string {
	const lines: string[] = [];
	const several = new Set(rows.map((row) => row.node)).size > 1;
	for (const runner of rows.filter((row) => row.client === "runner")) {
		const bare = rows.find(
			(row) => row.client === "bare" && row.scenario === runner.scenario && row.node === runner.node,
		);
		if (!bare || runner.wallsMs.length < 2) continue;
		const ratios = runner.wallsMs.map((wall, i) => wall / (bare.wallsMs[i] ?? Number.NaN));
		const sorted = [...ratios].sort((a, b) => a - b);
		const middle = sorted.length / 2;
		const median = sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
		lines.push(
			`${runner.scenario}${several ? ` ${runner.node}` : ""} ${ratios.map((ratio) => ratio.toFixed(3)).join(" ")} (median ${median.toFixed(3)}×)`,
		);
	}
	return lines.length === 0 ? "" : `runner/bare wall of each adjacent pair of runs: ${lines.join("; ")}.\n`;
}

/**
 * Each run's CPU per target, the client's and the server's for it, in each client's order of runs: when a pair
 * is out of line, this says whether the client, the server or both spent more on each target.
 */
function cpuByRun(rows: readonly Row[]): string {
	const several = new Set(rows.map((row) => row.node)).size > 1;
	const groups = [...new Set(rows.map((row) => `${row.scenario}${several ? ` ${row.node}` : ""}`))];
	const lines = groups.map((group) => {
		const clients = rows
			.filter((row) => `${row.scenario}${several ? ` ${row.node}` : ""}` === group)
			.map((row) => {
				const runs = row.cpuMsPerTargetByRun.map(
					(cpu, i) => `${cpu.toFixed(3)}/${(row.serverCpuMsPerTargetByRun[i] ?? Number.NaN).toFixed(3)}`,
				);
				return `${row.client} ${runs.join(" ")}`;
			});
		return `${group}: ${clients.join(", ")}`;
	});
	return `CPU ms/target of each run in its client's order, client/server: ${lines.join("; ")}.\n`;
}

function formatVerdict(verdict: Verdict): string {
	const word = verdict.pass === null ? "N/A " : verdict.pass ? "PASS" : "FAIL";
	return `${word}  ${verdict.target}: ${verdict.detail}`;
}

// --- main ----------------------------------------------------------------------------------------------

/** The report row (bench/report-bench.ts): a 1M-record run's report.html, its size and opening time. */
const REPORT_ROW = "report";
const REPORT_RECORDS = 1_000_000;
/** The extraction row (bench/extract-bench.ts): CPU per page for four fields, against parsel. */
const EXTRACT_ROW = "extract";
/** The crawl row (bench/crawl-bench.ts): client CPU per page and peak RSS crawling a generated 100k-page site. */
const CRAWL_ROW = "crawl";
/** The history row (bench/history-bench.ts): the per-job history at 1M targets (rebuild, start-up, RSS). */
const HISTORY_ROW = "history";
/** Re-extraction from stored pages against fetching at the account limit (`--only=reextract`; not in a full run). */
const REEXTRACT_ROW = "reextract";
/** N shards on one key: the sum in flight over time against the limit (`--only=shards`; not in a full run). */
const SHARDS_ROW = "shards";
/** 1, 2 and 4 fleet workers on one key through PostgreSQL against one local process (`--only=fleet`; not in a full run). */
const FLEET_ROW = "fleet";
/** Kill trials of a fleet run: fetches paid twice per SIGKILL (`--only=fleet-kills`; not in a full run). */
const FLEET_KILLS_ROW = "fleet-kills";
/** `mode: adaptive` against auto and browser, credits per useful record, and the forecast's error (`--only=economics`; not in a full run). */
const ECONOMICS_ROW = "economics";
/** The same list job through the same emulator API: scrapejob against Scrapy and Crawlee (`--only=peers`; not in a full run). */
const PEERS_ROW = "peers";

async function run(): Promise<number> {
	const options = parseArgs(process.argv.slice(2));
	const root = packageRoot();
	const started = performance.now();
	if (
		options.nodes.length > 0 &&
		options.only !== null &&
		!SCENARIOS.some((scenario) => scenario.name === options.only)
	)
		throw new Error(
			`--node: only the list rows (${SCENARIOS.map((scenario) => scenario.name).join(", ")}) run under another Node`,
		);
	if (options.only === REPORT_ROW) {
		const row = await benchReport(options.quick ? REPORT_RECORDS / 10 : REPORT_RECORDS, (line) =>
			process.stdout.write(`${line}\n`),
		);
		process.stdout.write(`\n${formatReportRow(row)}\n`);
		return row.verdicts.every((verdict) => verdict.met) ? 0 : 1;
	}
	if (options.only === CRAWL_ROW) {
		const row = await benchCrawl(options.quick, (line) => process.stdout.write(`${line}\n`), options.crawlPages);
		process.stdout.write(`\n${formatCrawlRow(row)}\n`);
		const feed = await benchCrawlFeed(options.quick ? 2_000 : 5_000, 32, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`${formatCrawlFeedRow(feed)}\n`);
		return row.verdicts.every((verdict) => verdict.met) ? 0 : 1;
	}
	if (options.only === HISTORY_ROW) {
		process.stdout.write(`${formatHistoryRow(benchHistory(options.quick))}\n`);
		return 0;
	}
	if (options.only === REEXTRACT_ROW) {
		const row = await benchReextract(options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatReextractRow(row)}\n`);
		return row.reextractRequests === 0 ? 0 : 1;
	}
	if (options.only === ECONOMICS_ROW) {
		const row = await benchEconomics(options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatEconomicsRow(row)}\n`);
		return 0;
	}
	if (options.only === PEERS_ROW) {
		const row = await benchPeers(root, options.quick, (line) => process.stderr.write(`bench: ${line}\n`));
		process.stdout.write(`\n${formatPeersRow(row)}\n`);
		return 0;
	}
	if (options.only === SHARDS_ROW) {
		const row = await benchShards(root, options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatShardsRow(row)}\n`);
		return row.verdicts.every((verdict) => verdict.met) ? 0 : 1;
	}
	if (options.only === FLEET_KILLS_ROW) {
		const say = (line: string) => process.stdout.write(`${line}\n`);
		const rows = [
			await benchFleetKills(root, options.quick, say, "list"),
			await benchFleetKills(root, options.quick, say, "crawl"),
		];
		for (const row of rows) say(`\n${formatFleetKillsRow(row)}`);
		return rows.every((row) => row.everyTargetOnce) ? 0 : 1;
	}
	if (options.only === FLEET_ROW) {
		const row = await benchFleet(root, options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatFleetRow(row)}\n`);
		return row.verdicts.every((verdict) => verdict.met) ? 0 : 1;
	}
	if (options.only === EXTRACT_ROW) {
		const row = await benchExtract(options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatExtractRow(row)}\n`);
		return 0;
	}
	const nodes = nodesUnderTest(options.nodes);
	const rows: Row[] = [];
	for (const scenario of SCENARIOS) {
		if (options.only !== null && scenario.name !== options.only) continue;
		const targets = options.targets ?? (options.quick ? Math.round(scenario.targets / 10) : scenario.targets);
		rows.push(...(await runScenario(scenario, targets, options, root, nodes)));
	}
	const seconds = (performance.now() - started) / 1000;
	const results = verdicts(rows);
	process.stdout.write(`\n${table(rows)}\n\n${results.map(formatVerdict).join("\n")}\n\n`);
	const runners = rows.filter((row) => row.client === "runner");
	const startup = runners.map((row) => `${row.startupCpuMs.toFixed(0)} ms`);
	const setup = runners.map((row) => `${row.scenario} ${((row.setupMs ?? 0) / 1000).toFixed(2)} s`);
	process.stdout.write(
		`Each client ran ${options.repeat}× per row${options.repeatGiven ? "" : " (the cpu row 4×, the scale row once)"} (ABBA order); shown: its fastest run, the highest RSS of all runs.\n` +
			`eff = (N·L/C) / wall. CPU: user + system of the client process, module loading excluded (runner: ${startup.join(", ")}).\n` +
			`Runner wall includes its set-up before the first fetch (validation, account look-up, counting pass): ${setup.join(", ")}.\n` +
			"other load: CPU cores used by other processes on the machine during the run shown. sockets: connections the emulator accepted during it.\n" +
			pairedRatios(rows) +
			cpuByRun(rows),
	);
	const disturbed = rows.filter((row) => (row.otherCores ?? 0) > BUSY_MACHINE_CORES);
	if (disturbed.length > 0) {
		process.stdout.write(
			`WARNING: the machine was busy with other work (> ${BUSY_MACHINE_CORES} cores) during ${disturbed
				.map((row) => `${row.scenario}/${row.client}${nodes.length > 1 ? `/${row.node}` : ""}`)
				.join(", ")}; wall times are disturbed.\n`,
		);
	}
	if (options.only === null) {
		// Cheap (seconds): the full bench ends with the extraction row.
		const row = await benchExtract(options.quick, (line) => process.stdout.write(`${line}\n`));
		process.stdout.write(`\n${formatExtractRow(row)}\n\n`);
	}
	process.stdout.write(`Bench took ${seconds.toFixed(0)} s${options.quick ? " (--quick)" : ""}.\n`);

	const resultsDir = join(root, "bench", "results");
	await mkdir(resultsDir, { recursive: true });
	const file = join(resultsDir, "latest.json");
	const json = {
		date: new Date().toISOString(),
		node: process.version,
		quick: options.quick,
		repeat: options.repeat,
		only: options.only,
		seconds,
		targets: TARGETS,
		rows,
		verdicts: results,
	};
	await writeFile(file, jsonText(json));
	process.stdout.write(`Results: ${file}\n`);
	return 0;
}

run().then(
	(code) => {
		process.exitCode = code;
	},
	(error: unknown) => {
		killAll();
		process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
		process.exitCode = 1;
	},
);
