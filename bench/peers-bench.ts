/**
 * The peers row of `npm run bench` (`--only=peers`; not in a full run): the same list of N demo-site
 * pages fetched three ways through the same emulator API (`POST /api/v1/scraper/realtime`, the scraper
 * key in `x-api-key`, `mode: request`) at the same concurrency, so that all three pay the same service
 * round trip (issue #46):
 *
 * - scrapejob: `scrapejob run JOB --out DIR --quiet` (`client-runner.ts`), JSONL output, no content;
 * - Scrapy (Debian's `python3-scrapy`): a spider that POSTs each URL, `CONCURRENT_REQUESTS` and
 *   `CONCURRENT_REQUESTS_PER_DOMAIN` = C, no download delay, no autothrottle, default retries, items
 *   to a JSONL feed (`FEEDS`);
 * - Crawlee (`@crawlee/http`, installed at bench time into a folder outside the repository, never a
 *   dependency of the project): an `HttpCrawler` at min = max = desired concurrency C
 *   (`client-crawlee.ts`), once with its default request queue (kept on disk) and once with the queue
 *   in memory only (`CRAWLEE_PERSIST_STORAGE=false`; the `crawlee-memory` column).
 *
 * One emulator and demo site (the site answering after a fixed latency) in this process; one process
 * per measured run, in ABCD DCBA order, repeated. Each client measures its run (wall and user + system
 * CPU from just before the work to its end, module loading apart) and this process polls the client's
 * `VmHWM` (`/proc/<pid>/status`) as well; the peak RSS shown is the higher of the two. After each run
 * the emulator's ledger must hold exactly one realtime request per target, each answered 200, and the
 * site exactly N fetches: a client that retried or dropped a page fails the row.
 * A missing Scrapy or an unreachable registry skips that column, with a message saying why.
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Emulator, startDemoSite, startEmulator } from "../src/emulator/index.js";
import type { CrawleeClientConfig } from "./client-crawlee.js";
import type { ClientConfig, ClientReport } from "./protocol.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PYTHON = "/usr/bin/python3";
/** Where `@crawlee/http` is installed (kept between benches: outside the repository, in the temporary folder). */
const CRAWLEE_PREFIX = join(tmpdir(), "scrapejob-bench-crawlee");
const TARGETS = 2_000;
const CONCURRENCY = 20;
const LATENCY_MS = 50;
/** Rounds of ABCD DCBA ABCD: each tool runs this many times (three keep the row under 3 min on a busy 2-core machine). */
const ROUNDS = 3;
const WARM_UP_TARGETS = 1_000;
const RUN_TIMEOUT_MS = 180_000;
const RSS_POLL_MS = 50;
const MB = 1024 * 1024;

/** `crawlee-memory`: the same crawler with its request queue kept in memory only (`CRAWLEE_PERSIST_STORAGE=false`). */
export type PeerTool = "scrapejob" | "scrapy" | "crawlee" | "crawlee-memory";
const TOOLS: readonly PeerTool[] = ["scrapejob", "scrapy", "crawlee", "crawlee-memory"];

/** One measured run of one tool. */
export interface PeerRun {
	readonly tool: PeerTool;
	/** From just before the work to its end (after imports), ms. */
	readonly wallMs: number;
	/** From spawn to exit (interpreter start-up and imports included), ms. */
	readonly lifetimeMs: number;
	/** User + system CPU of the work, ms. */
	readonly cpuMs: number;
	/** User + system CPU of the whole process, start-up included, ms. */
	readonly processCpuMs: number;
	readonly peakRssBytes: number;
	/** CPU cores used by other processes on the machine during the run (not the client, not this process). */
	readonly otherCores: number | null;
	/** Most realtime requests the emulator held at once during the run (C when the tool kept its concurrency full). */
	readonly maxInFlight: number;
}

export interface PeerColumn {
	readonly tool: PeerTool;
	/** Version of the tool (scrapejob: package.json's). */
	readonly version: string;
	readonly runs: readonly PeerRun[];
}

export interface PeersBench {
	readonly targets: number;
	readonly concurrency: number;
	readonly latencyMs: number;
	readonly rounds: number;
	readonly node: string;
	readonly python: string | null;
	readonly columns: readonly PeerColumn[];
	/** Why a column did not run. */
	readonly skipped: ReadonlyArray<{ readonly tool: PeerTool; readonly reason: string }>;
	/** One line per tool: what the ledger showed over its runs. */
	readonly ledger: readonly string[];
	readonly wallMs: number;
}

// --- the tools -------------------------------------------------------------------------------------

/** The Scrapy client: a spider reading the URL list, argv[1] the config as JSON; prints one report line. */
const SCRAPY_SPIDER = `
import json, resource, sys, time

def cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000

config = json.loads(sys.argv[1])
import scrapy
from scrapy.crawler import CrawlerProcess

class PeersSpider(scrapy.Spider):
    name = "peers"

    def start_requests(self):
        headers = {"content-type": "application/json", "x-api-key": config["scraperKey"]}
        with open(config["urlsFile"], encoding="utf-8") as lines:
            for line in lines:
                target = line.strip()
                if not target:
                    continue
                # Every request goes to the same endpoint: dont_filter keeps the duplicate filter from dropping them.
                yield scrapy.Request(config["realtimeUrl"], method="POST", headers=headers,
                                     body=json.dumps({"url": target, "mode": "request"}),
                                     dont_filter=True, cb_kwargs={"target": target})

    def parse(self, response, target):
        yield {"url": target, "status": response.status, "bytes": len(response.body)}

startup_cpu = cpu_ms()
wall_before = time.perf_counter()
cpu_before = cpu_ms()
process = CrawlerProcess(settings={
    "CONCURRENT_REQUESTS": config["concurrency"],
    "CONCURRENT_REQUESTS_PER_DOMAIN": config["concurrency"],
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "WARNING",
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    "FEEDS": {config["outFile"]: {"format": "jsonlines"}},
})
crawler = process.create_crawler(PeersSpider)
process.crawl(crawler)
process.start()
wall = (time.perf_counter() - wall_before) * 1000
cpu = cpu_ms() - cpu_before
stats = crawler.stats.get_stats()
print("PEERS-REPORT " + json.dumps({
    "wallMs": wall, "cpuMs": cpu, "startupCpuMs": startup_cpu, "processCpuMs": cpu_ms(),
    "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "results": stats.get("item_scraped_count", 0), "retries": stats.get("retry/count", 0),
}), flush=True)
`;

function scrapyVersion(): { version: string | null; note: string | null } {
	if (!existsSync(PYTHON)) return { version: null, note: `Scrapy column skipped: no ${PYTHON}` };
	try {
		const version = execFileSync(PYTHON, ["-c", "import scrapy; print(scrapy.__version__)"], {
			encoding: "utf8",
			stdio: ["ignore", "pipe", "ignore"],
		}).trim();
		return { version, note: null };
	} catch {
		return {
			version: null,
			note: "Scrapy column skipped: Scrapy is not installed (`apt-get install -y python3-scrapy`)",
		};
	}
}

function pythonVersion(): string | null {
	try {
		return execFileSync(PYTHON, ["-c", "import platform; print(platform.python_version())"], {
			encoding: "utf8",
			stdio: ["ignore", "pipe", "ignore"],
		}).trim();
	} catch {
		return null;
	}
}

/** `@crawlee/http`'s version in the bench's own prefix, installed there first when missing; null with a note when it cannot be. */
function ensureCrawlee(log: (line: string) => void): { version: string | null; note: string | null } {
	const manifest = join(CRAWLEE_PREFIX, "node_modules", "@crawlee", "http", "package.json");
	if (!existsSync(manifest)) {
		log(`peers: installing @crawlee/http into ${CRAWLEE_PREFIX} (outside the repository, not a dependency)…`);
		// Under `npm run`, npm_execpath is npm's own script: run it with this Node.
		const npmScript = process.env.npm_execpath;
		const [command, prefixArgs] =
			npmScript?.endsWith(".js") || npmScript?.endsWith(".cjs")
				? [process.execPath, [npmScript]]
				: ["npm", [] as string[]];
		try {
			execFileSync(
				command,
				[...prefixArgs, "install", "--prefix", CRAWLEE_PREFIX, "--no-audit", "--no-fund", "@crawlee/http"],
				{ stdio: ["ignore", "ignore", "pipe"], timeout: 300_000 },
			);
		} catch (error) {
			const detail = error instanceof Error ? error.message.split("\n").slice(0, 3).join(" ") : String(error);
			return {
				version: null,
				note: `Crawlee column skipped: \`npm install --prefix ${CRAWLEE_PREFIX} @crawlee/http\` failed (registry unreachable?): ${detail}`,
			};
		}
	}
	try {
		return { version: (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version, note: null };
	} catch {
		return { version: null, note: `Crawlee column skipped: no ${manifest} after the install` };
	}
}

// --- measuring one run -------------------------------------------------------------------------------

/** Busy CPU time of the whole machine so far, ms (Linux `/proc/stat`); null elsewhere. */
async function machineBusyMs(): Promise<number | null> {
	try {
		const [line = ""] = (await readFile("/proc/stat", "utf8")).split("\n", 1);
		const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
			.trim()
			.split(/\s+/)
			.map(Number);
		return (user + nice + system + irq + softirq + steal) * 10;
	} catch {
		return null;
	}
}

/** Poll a process's kernel high-water mark of RSS until stopped; returns the highest seen, bytes. */
function pollPeakRss(pid: number | undefined): () => number {
	let peak = 0;
	const read = () => {
		if (pid === undefined) return;
		readFile(`/proc/${pid}/status`, "utf8").then(
			(text) => {
				const match = /^VmHWM:\s+(\d+) kB/m.exec(text);
				if (match) peak = Math.max(peak, Number(match[1]) * 1024);
			},
			() => undefined,
		);
	};
	read();
	const timer = setInterval(read, RSS_POLL_MS);
	return () => {
		clearInterval(timer);
		return peak;
	};
}

interface Report {
	readonly wallMs: number;
	readonly cpuMs: number;
	readonly processCpuMs: number;
	readonly peakRssBytes: number;
	readonly results: number;
}

/** Run a child to its end; rejects on a non-zero exit or a missing report. */
function runChild(child: ChildProcess, name: string, readReport: (stdout: string) => Report | null): Promise<Report> {
	let stdout = "";
	let stderr = "";
	let ipcReport: ClientReport | null = null;
	child.stdout?.on("data", (chunk: Buffer) => {
		stdout += chunk.toString("utf8");
	});
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr = (stderr + chunk.toString("utf8")).slice(-8000);
	});
	child.on("message", (message: { type?: string }) => {
		if (message.type === "report") ipcReport = message as ClientReport;
	});
	return new Promise<Report>((resolve, reject) => {
		const timer = setTimeout(() => {
			child.kill("SIGKILL");
			reject(new Error(`${name}: no end within ${RUN_TIMEOUT_MS / 1000} s:\n${stderr}`));
		}, RUN_TIMEOUT_MS);
		child.once("error", (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.once("exit", (code) => {
			clearTimeout(timer);
			const report = ipcReport ?? readReport(stdout);
			if (code !== 0 || report === null) {
				reject(new Error(`${name} exited with code ${code}${report === null ? ", no report" : ""}:\n${stderr}`));
			} else resolve(report);
		});
	});
}

function jobYaml(concurrency: number): string {
	return [
		"name: bench",
		`concurrency: ${concurrency}`,
		"defaults:",
		"  mode: request",
		"sources:",
		"  - file: urls.txt",
		"output:",
		"  formats: [jsonl]",
		"  content: none",
		"",
	].join("\n");
}

function runnerEnv(emulator: Emulator): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {};
	for (const [name, value] of Object.entries(process.env)) {
		if (!name.startsWith("SCRAPEJOB_")) env[name] = value;
	}
	return { ...env, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl, NO_COLOR: "1" };
}

/** Lines of a JSONL file, and how many have `field` equal to `value`. */
async function countLines(file: string, field: string, value: unknown): Promise<{ lines: number; matching: number }> {
	const lines = (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");
	const matching = lines.filter((line) => (JSON.parse(line) as Record<string, unknown>)[field] === value).length;
	return { lines: lines.length, matching };
}

/** The one run folder the runner made under `<out>/bench/`. */
async function runnerResults(outDir: string): Promise<string> {
	const entries = await readdir(join(outDir, "bench"), { withFileTypes: true });
	const runs = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
	const [run] = runs;
	if (runs.length !== 1 || run === undefined) throw new Error(`scrapejob: expected one run folder in ${outDir}/bench`);
	return join(outDir, "bench", run, "results.jsonl");
}

/**
 * What the ledger holds for the run just ended: one realtime request per target, each answered 200,
 * no other realtime request, and the site fetched N times. Throws otherwise; clears the ledger.
 */
function checkLedger(tool: PeerTool, emulator: Emulator, siteFetches: number, targets: readonly string[]): number {
	const realtime = emulator.ledger.byEndpoint("realtime");
	const perUrl = new Map<string, number>();
	let notOk = 0;
	for (const entry of realtime) {
		perUrl.set(entry.url ?? "", (perUrl.get(entry.url ?? "") ?? 0) + 1);
		if (entry.status !== 200) notOk += 1;
	}
	const known = new Set(targets);
	const missing = targets.filter((target) => perUrl.get(target) === undefined).length;
	const twice = [...perUrl.values()].filter((count) => count > 1).length;
	const unknown = [...perUrl.keys()].filter((url) => !known.has(url)).length;
	emulator.ledger.clear();
	if (realtime.length !== targets.length || missing > 0 || twice > 0 || unknown > 0 || notOk > 0) {
		throw new Error(
			`${tool}: the ledger holds ${realtime.length} realtime requests for ${targets.length} targets (${missing} missing, ${twice} fetched more than once, ${unknown} unknown, ${notOk} not answered 200)`,
		);
	}
	if (siteFetches !== targets.length)
		throw new Error(`${tool}: the demo site was fetched ${siteFetches} times for ${targets.length} targets`);
	return realtime.length;
}

// --- the row -----------------------------------------------------------------------------------------

/** Tools in ABCD DCBA order, `rounds` times each. */
function runOrder(tools: readonly PeerTool[], rounds: number): PeerTool[] {
	const order: PeerTool[] = [];
	for (let round = 0; round < rounds; round++) order.push(...(round % 2 === 0 ? tools : [...tools].reverse()));
	return order;
}

export async function benchPeers(root: string, quick: boolean, log: (line: string) => void): Promise<PeersBench> {
	const started = performance.now();
	const targetsCount = quick ? TARGETS / 4 : TARGETS;
	const rounds = quick ? 2 : ROUNDS;
	const skipped: Array<{ tool: PeerTool; reason: string }> = [];
	const versions = new Map<PeerTool, string>();
	versions.set(
		"scrapejob",
		(JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version,
	);
	const scrapy = scrapyVersion();
	if (scrapy.version) versions.set("scrapy", scrapy.version);
	else skipped.push({ tool: "scrapy", reason: scrapy.note ?? "" });
	const crawlee = ensureCrawlee(log);
	if (crawlee.version) {
		versions.set("crawlee", crawlee.version);
		versions.set("crawlee-memory", crawlee.version);
	} else skipped.push({ tool: "crawlee", reason: crawlee.note ?? "" });
	for (const { reason } of skipped) log(`peers: ${reason}`);
	const tools = TOOLS.filter((tool) => versions.has(tool));

	const site = await startDemoSite({ pages: 100, latencyMs: LATENCY_MS });
	const emulator = await startEmulator({
		scenario: { concurrency: CONCURRENCY, latency_ms: 0, credits: 1e9 },
		ledger: { maxEntries: 10 * targetsCount },
	});
	const dir = await mkdtemp(join(tmpdir(), "scrapejob-bench-peers-"));
	const runs: PeerRun[] = [];
	const requests = new Map<PeerTool, number>();
	try {
		const targets = Array.from({ length: targetsCount }, (_, i) => `${site.url}/page/${i + 1}`);
		const urlsFile = join(dir, "urls.txt");
		await writeFile(urlsFile, `${targets.join("\n")}\n`);
		const jobFile = join(dir, "job.yaml");
		await writeFile(jobFile, jobYaml(CONCURRENCY));
		const spider = join(dir, "peers_spider.py");
		await writeFile(spider, SCRAPY_SPIDER);
		const realtimeUrl = `${emulator.scraperUrl}/scraper/realtime`;

		log(
			`peers: N=${targetsCount} C=${CONCURRENCY} L=${LATENCY_MS} ms (demo site), ${rounds} rounds of ${tools.join(", ")} — warm-up`,
		);
		const warmUp: ClientConfig = {
			urlsFile,
			concurrency: CONCURRENCY,
			realtimeUrl,
			scraperKey: emulator.scraperKey,
			outFile: join(dir, "warm-up.jsonl"),
			limit: Math.min(targetsCount, WARM_UP_TARGETS),
		};
		await runChild(
			fork(join(HERE, "client-bare.js"), [JSON.stringify(warmUp)], { stdio: ["ignore", "pipe", "pipe", "ipc"] }),
			"warm-up",
			() => null,
		);
		emulator.ledger.clear();

		const order = runOrder(tools, rounds);
		for (const [index, tool] of order.entries()) {
			log(`peers: ${tool} (run ${index + 1} of ${order.length})`);
			const out = join(dir, `${tool}-${index}`);
			await mkdir(out, { recursive: true });
			const outFile = join(out, "items.jsonl");
			const siteBefore = site.requestCount();
			const busyBefore = await machineBusyMs();
			const selfBefore = process.cpuUsage();
			const spawned = performance.now();
			let child: ChildProcess;
			if (tool === "scrapejob") {
				const config: ClientConfig = { urlsFile, concurrency: CONCURRENCY, jobFile, outDir: out };
				child = fork(join(HERE, "client-runner.js"), [JSON.stringify(config)], {
					stdio: ["ignore", "pipe", "pipe", "ipc"],
					env: runnerEnv(emulator),
					execArgv: [],
				});
			} else if (tool === "crawlee" || tool === "crawlee-memory") {
				const config: CrawleeClientConfig = {
					urlsFile,
					concurrency: CONCURRENCY,
					realtimeUrl,
					scraperKey: emulator.scraperKey,
					outFile,
					crawleePrefix: CRAWLEE_PREFIX,
				};
				child = fork(join(HERE, "client-crawlee.js"), [JSON.stringify(config)], {
					stdio: ["ignore", "pipe", "pipe", "ipc"],
					cwd: out,
					env: {
						...process.env,
						CRAWLEE_STORAGE_DIR: join(out, "storage"),
						CRAWLEE_LOG_LEVEL: "WARNING",
						...(tool === "crawlee-memory" ? { CRAWLEE_PERSIST_STORAGE: "false" } : {}),
					},
					execArgv: [],
				});
			} else {
				const config = { urlsFile, concurrency: CONCURRENCY, realtimeUrl, scraperKey: emulator.scraperKey, outFile };
				child = spawn(PYTHON, [spider, JSON.stringify(config)], { stdio: ["ignore", "pipe", "pipe"], cwd: out });
			}
			const stopPolling = pollPeakRss(child.pid);
			const report = await runChild(child, tool, (stdout) => {
				const line = stdout.split("\n").find((text) => text.startsWith("PEERS-REPORT "));
				return line ? (JSON.parse(line.slice("PEERS-REPORT ".length)) as Report) : null;
			});
			const lifetimeMs = performance.now() - spawned;
			const polledPeak = stopPolling();
			const selfCpu = process.cpuUsage(selfBefore);
			const busyAfter = await machineBusyMs();
			const maxInFlight = emulator.ledger.maxInFlight();
			requests.set(
				tool,
				(requests.get(tool) ?? 0) + checkLedger(tool, emulator, site.requestCount() - siteBefore, targets),
			);
			const written =
				tool === "scrapejob"
					? await countLines(await runnerResults(out), "status", "ok")
					: await countLines(outFile, "status", 200);
			if (written.lines !== targetsCount || written.matching !== targetsCount) {
				throw new Error(`${tool}: ${written.lines} records, ${written.matching} of them ok; expected ${targetsCount}`);
			}
			const otherCores =
				busyBefore === null || busyAfter === null
					? null
					: Math.max(0, busyAfter - busyBefore - report.processCpuMs - (selfCpu.user + selfCpu.system) / 1000) /
						lifetimeMs;
			runs.push({
				tool,
				wallMs: report.wallMs,
				lifetimeMs,
				cpuMs: report.cpuMs,
				processCpuMs: report.processCpuMs,
				peakRssBytes: Math.max(report.peakRssBytes, polledPeak),
				otherCores,
				maxInFlight,
			});
			await rm(out, { recursive: true, force: true });
		}
	} finally {
		await emulator.close();
		await site.close();
		await rm(dir, { recursive: true, force: true });
	}
	const ledger = tools.map((tool) => {
		const count = runs.filter((run) => run.tool === tool).length;
		return `${tool}: ${requests.get(tool) ?? 0} realtime requests over ${count} runs of ${targetsCount} — every page fetched exactly once a run, all answered 200, no retry`;
	});
	return {
		targets: targetsCount,
		concurrency: CONCURRENCY,
		latencyMs: LATENCY_MS,
		rounds,
		node: process.version,
		python: scrapy.version ? pythonVersion() : null,
		columns: tools.map((tool) => ({
			tool,
			version: versions.get(tool) ?? "?",
			runs: runs.filter((run) => run.tool === tool),
		})),
		skipped,
		ledger,
		wallMs: performance.now() - started,
	};
}

// --- the report --------------------------------------------------------------------------------------

interface Spread {
	readonly median: number;
	readonly min: number;
	readonly max: number;
}

function spread(values: readonly number[]): Spread {
	const sorted = [...values].sort((a, b) => a - b);
	const middle = sorted.length / 2;
	const median = sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
	return { median, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

const range = (value: Spread, digits: number, scale = 1) =>
	`${(value.median * scale).toFixed(digits)} (${(value.min * scale).toFixed(digits)}–${(value.max * scale).toFixed(digits)})`;

export function formatPeersRow(row: PeersBench): string {
	const figures = row.columns.map((column) => ({
		column,
		wall: spread(column.runs.map((run) => run.wallMs)),
		lifetime: spread(column.runs.map((run) => run.lifetimeMs)),
		cpu: spread(column.runs.map((run) => run.cpuMs / row.targets)),
		processCpu: spread(column.runs.map((run) => run.processCpuMs)),
		rss: spread(column.runs.map((run) => run.peakRssBytes / MB)),
		other: Math.max(...column.runs.map((run) => run.otherCores ?? 0)),
		inFlight: Math.min(...column.runs.map((run) => run.maxInFlight)),
	}));
	const base = figures.find((figure) => figure.column.tool === "scrapejob");
	const ratio = (value: number, of: number | undefined) => (of === undefined ? "—" : `${(value / of).toFixed(2)}×`);
	const lines = [
		`peers: N=${row.targets} pages, C=${row.concurrency}, demo site latency ${row.latencyMs} ms, through the emulator's realtime API; ${row.rounds} runs of each tool (ABCD DCBA order), ${(row.wallMs / 1000).toFixed(0)} s`,
		`Node ${row.node}${row.python ? `, Python ${row.python}` : ""}; ${row.columns.map((column) => `${column.tool} ${column.version}`).join(", ")}`,
		"",
		"| tool | wall s, median (min–max) | pages/s | wall with start-up s | CPU ms/page (min–max) | process CPU s | peak RSS MB (min–max) | wall ÷ scrapejob | CPU ÷ scrapejob | RSS ÷ scrapejob |",
		"|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
	];
	for (const figure of figures) {
		lines.push(
			`| ${figure.column.tool} ${figure.column.version} | ${range(figure.wall, 2, 1 / 1000)} | ${(row.targets / (figure.wall.median / 1000)).toFixed(0)} | ${(figure.lifetime.median / 1000).toFixed(2)} | ${range(figure.cpu, 3)} | ${(figure.processCpu.median / 1000).toFixed(2)} | ${range(figure.rss, 0)} | ${ratio(figure.wall.median, base?.wall.median)} | ${ratio(figure.cpu.median, base?.cpu.median)} | ${ratio(figure.rss.median, base?.rss.median)} |`,
		);
	}
	lines.push(
		"",
		`wall and CPU: from just before the work (imports done) to its end; "wall with start-up": spawn to exit; process CPU: the whole process, start-up included. Ideal wall N·L/C = ${((row.targets * row.latencyMs) / row.concurrency / 1000).toFixed(2)} s.`,
		`other load (cores used by the rest of the machine), highest over each tool's runs: ${figures.map((figure) => `${figure.column.tool} ${figure.other.toFixed(2)}`).join(", ")}.`,
		`most requests in flight at the emulator (lowest over each tool's runs; C = ${row.concurrency} is full): ${figures.map((figure) => `${figure.column.tool} ${figure.inFlight}`).join(", ")}.`,
		`each run in order, wall s / CPU ms per page / most in flight: ${figures
			.map(
				(figure) =>
					`${figure.column.tool} ${figure.column.runs.map((run) => `${(run.wallMs / 1000).toFixed(2)}/${(run.cpuMs / row.targets).toFixed(2)}/${run.maxInFlight}`).join(" ")}`,
			)
			.join("; ")}.`,
		...row.ledger.map((line) => `ledger: ${line}`),
		...row.skipped.map((skip) => `SKIPPED ${skip.tool}: ${skip.reason}`),
	);
	return lines.join("\n");
}
