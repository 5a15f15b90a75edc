/**
 * What the bench's processes tell each other over the IPC channel of `child_process.fork`, and the
 * meter every client uses to measure itself. The orchestrator (`bench.ts`) forks one server process
 * (`serve.ts`: emulator + demo site) per scenario and one client process per measured run
 * (`client-bare.ts`, `client-runner.ts`), so that no process's CPU or memory counts against another's.
 */
import { appendFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

/** argv[2] of `serve.ts`, as JSON. */
export interface ServeConfig {
	/** Concurrency limit of the emulated account. */
	readonly concurrency: number;
	/** Latency the emulator adds to every fetch, ms. */
	readonly latencyMs: number;
}

/** Messages from `serve.ts`. */
export type ServeMessage =
	| {
			readonly type: "ready";
			readonly apiUrl: string;
			readonly scraperUrl: string;
			readonly accountKey: string;
			readonly scraperKey: string;
			readonly siteUrl: string;
	  }
	| {
			readonly type: "stats";
			readonly cpuMs: number;
			readonly rssBytes: number;
			readonly siteRequests: number;
			/** TCP connections the emulator has accepted so far (clients' sockets; the demo site's are apart). */
			readonly connections: number;
	  };

/** Messages to `serve.ts`. */
export type ServeCommand = { readonly type: "stats" } | { readonly type: "close" };

/** argv[2] of a client, as JSON. */
export interface ClientConfig {
	/** Text file, one target URL a line. */
	readonly urlsFile: string;
	/** Read at most this many URLs (the bare client's warm-up pass). @default all */
	readonly limit?: number;
	readonly concurrency: number;
	/** Bare client: the realtime endpoint, its key and the JSONL file to write. */
	readonly realtimeUrl?: string;
	readonly scraperKey?: string;
	readonly outFile?: string;
	/** Runner client: the job file and the `--out` folder. */
	readonly jobFile?: string;
	readonly outDir?: string;
}

/** What a client measured, sent once at the end. */
export interface ClientReport {
	readonly type: "report";
	/** From just before the work started (first request, or `main()` for the runner) to its end, ms. */
	readonly wallMs: number;
	/** When the work started, ms since the epoch (to compare with times the runner writes). */
	readonly startEpochMs: number;
	/** User + system CPU of the work only (start-up excluded), ms. */
	readonly cpuMs: number;
	/** Module loading before the work (the runner's imports), ms of CPU; 0 for the bare client. */
	readonly startupCpuMs: number;
	/** CPU of the whole process up to the report, start-up included, ms. */
	readonly processCpuMs: number;
	/** Highest resident set size of the whole process (kernel high-water mark and 50 ms samples), bytes. */
	readonly peakRssBytes: number;
	/** Resident set size just before the work started, bytes. */
	readonly baseRssBytes: number;
	/** Highest V8 heap size (`heapTotal`) and off-heap memory (`external`, buffers included) seen in the samples, bytes. */
	readonly peakHeapTotalBytes: number;
	readonly peakExternalBytes: number;
	/** Results the client believes it wrote; the orchestrator counts them again from the files. */
	readonly results: number;
	/** The runner's exit code (0: every target succeeded); 0 for the bare client when it finished. */
	readonly exitCode: number;
	/** The runner's stdout (its summary), kept for error messages. */
	readonly output?: string;
}

export type Measurement = Pick<
	ClientReport,
	| "wallMs"
	| "startEpochMs"
	| "cpuMs"
	| "processCpuMs"
	| "peakRssBytes"
	| "baseRssBytes"
	| "peakHeapTotalBytes"
	| "peakExternalBytes"
>;

export interface Meter {
	/** Stop sampling and return wall, CPU and peak memory since the meter started. */
	stop(): Measurement;
}

/** Sample interval of the RSS meter, ms. */
const RSS_SAMPLE_MS = 50;
/** Heap figures are sampled every this many RSS samples. */
const HEAP_SAMPLE_EVERY = 5;

/**
 * `BENCH_MEMORY_TRACE=FILE npm run bench …`: every 2 s (`BENCH_MEMORY_TRACE_MS`) each measured client appends a JSON line of
 * where its memory is (RSS, V8's spaces, external and array buffers, MiB) to FILE, to see what grows with N.
 */
function startMemoryTrace(file: string | undefined): NodeJS.Timeout | null {
	if (!file) return null;
	const started = performance.now();
	const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
	const timer = setInterval(() => {
		const usage = process.memoryUsage();
		const spaces = Object.fromEntries(
			getHeapSpaceStatistics().map((space) => [space.space_name, mib(space.space_size)]),
		);
		const line = {
			client: process.argv[1]?.split("/").pop(),
			s: Math.round((performance.now() - started) / 1000),
			rss: mib(usage.rss),
			maxRss: mib(process.resourceUsage().maxRSS * 1024),
			heapTotal: mib(usage.heapTotal),
			heapUsed: mib(usage.heapUsed),
			external: mib(usage.external),
			arrayBuffers: mib(usage.arrayBuffers),
			...spaces,
		};
		appendFileSync(file, `${JSON.stringify(line)}\n`);
	}, Number(process.env.BENCH_MEMORY_TRACE_MS) || 2000);
	timer.unref();
	return timer;
}

/** Start measuring this process: wall time, CPU (user + system) and memory sampled every 50 ms. */
export function startMeter(): Meter {
	const baseRssBytes = process.memoryUsage.rss();
	let peakRssBytes = baseRssBytes;
	let peakHeapTotalBytes = 0;
	let peakExternalBytes = 0;
	let ticks = 0;
	const sample = () => {
		peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss());
		// The heap figures cost more to collect (they walk V8's spaces): every fifth tick is enough.
		if (ticks++ % HEAP_SAMPLE_EVERY !== 0) return;
		const usage = process.memoryUsage();
		peakHeapTotalBytes = Math.max(peakHeapTotalBytes, usage.heapTotal);
		peakExternalBytes = Math.max(peakExternalBytes, usage.external);
	};
	sample();
	const timer = setInterval(sample, RSS_SAMPLE_MS);
	timer.unref();
	const trace = startMemoryTrace(process.env.BENCH_MEMORY_TRACE);
	const cpuBefore = process.cpuUsage();
	const wallBefore = performance.now();
	return {
		stop() {
			const wallMs = performance.now() - wallBefore;
			const total = process.cpuUsage();
			const cpu = process.cpuUsage(cpuBefore);
			clearInterval(timer);
			if (trace) clearInterval(trace);
			ticks = 0;
			sample();
			// maxRSS (KiB) is the kernel's high-water mark: it catches peaks between two samples.
			peakRssBytes = Math.max(peakRssBytes, process.resourceUsage().maxRSS * 1024);
			return {
				wallMs,
				startEpochMs: performance.timeOrigin + wallBefore,
				cpuMs: (cpu.user + cpu.system) / 1000,
				processCpuMs: (total.user + total.system) / 1000,
				peakRssBytes,
				baseRssBytes,
				peakHeapTotalBytes,
				peakExternalBytes,
			};
		},
	};
}

/** Parse a client's or the server's argv[2]. */
export function readConfig<T>(): T {
	const text = process.argv[2];
	if (!text) throw new Error("expected the configuration as JSON in argv[2]");
	return JSON.parse(text) as T;
}

/** Send the report to the orchestrator, then exit (keep-alive sockets must not hold the process open). */
export function sendAndExit(message: ClientReport | ServeMessage, code = 0): void {
	if (!process.send) throw new Error("not started by the bench: no IPC channel");
	process.send(message, undefined, {}, () => process.exit(code));
}

/** A client or server whose orchestrator went away must not linger. */
export function exitWithParent(): void {
	process.on("disconnect", () => process.exit(1));
}
