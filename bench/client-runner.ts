/**
 * The scrapejob runner as a user runs it: `scrapejob run JOB --out DIR --quiet`, called in-process
 * through the CLI bundle's `main()` (dist/cli/bundle/main.js, the code `scrapejob` runs, built by
 * `npm run build`) with the account key and address in the environment (the orchestrator sets
 * `SCRAPEJOB_ACCOUNT_KEY` and `SCRAPEJOB_API_URL`). Loading the CLI's modules is measured apart
 * from the run itself; the run includes everything `main()` does (validation, the account look-up,
 * the counting pass over the source, the fetches, the JSONL, journal and run.log).
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { main as Main } from "../src/cli/main.js";
import { type ClientConfig, exitWithParent, readConfig, sendAndExit, startMeter } from "./protocol.js";

const config = readConfig<ClientConfig>();
exitWithParent();
if (!config.jobFile || !config.outDir) throw new Error("runner client: incomplete config");

/** dist/cli/bundle/main.js of the package this file was built in. */
function bundledMain(): string {
	for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
		const file = join(dir, "dist", "cli", "bundle", "main.js");
		if (existsSync(join(dir, "package.json")) && existsSync(file)) return file;
	}
	throw new Error("runner client: dist/cli/bundle/main.js is missing: run npm run build first");
}

const printed: Buffer[] = [];
const capture = new Writable({
	write(chunk: Buffer, _encoding, callback) {
		printed.push(chunk);
		callback();
	},
});
const ctx = { stdout: capture, stderr: capture, env: process.env, cwd: process.cwd(), exitCode: 0 };

const startup = process.cpuUsage();
// The bundle, not tsc's modules: what it loads, and so the heap a run starts with, is what users get
// (tsc's ~900 modules grow V8's young generation to 32 MiB before the run caps it at 16).
const { main } = (await import(pathToFileURL(bundledMain()).href)) as { main: typeof Main };
// `main` loads a command's chunk when it runs it: `run --help` loads it here, so that it counts as loading, not as the run.
await main(["run", "--help"], { ...ctx, signal: new AbortController().signal });
const loaded = process.cpuUsage(startup);
printed.length = 0;

const meter = startMeter();
const exitCode = await main(["run", config.jobFile, "--out", config.outDir, "--quiet"], {
	...ctx,
	signal: new AbortController().signal,
});
const measured = meter.stop();
sendAndExit({
	type: "report",
	...measured,
	startupCpuMs: (loaded.user + loaded.system) / 1000,
	// Counted from results.jsonl by the orchestrator.
	results: -1,
	exitCode,
	output: Buffer.concat(printed).toString("utf8").slice(-4000),
});
