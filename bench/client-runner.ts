/**
 * The scrapejob runner as a user runs it: `scrapejob run JOB --out DIR --quiet`, called in-process
 * through `main()` with the account key and address in the environment (the orchestrator sets
 * `SCRAPEJOB_ACCOUNT_KEY` and `SCRAPEJOB_API_URL`). Loading the CLI's modules is measured apart
 * from the run itself; the run includes everything `main()` does (validation, the account look-up,
 * the counting pass over the source, the fetches, the JSONL, journal and run.log).
 */
import { Writable } from "node:stream";
import { type ClientConfig, exitWithParent, readConfig, sendAndExit, startMeter } from "./protocol.js";

const config = readConfig<ClientConfig>();
exitWithParent();
if (!config.jobFile || !config.outDir) throw new Error("runner client: incomplete config");

const startup = process.cpuUsage();
const { main } = await import("../src/cli/main.js");
// `main` loads a command's modules when it runs it: loaded here, so that they count as loading, not as the run.
await import("../src/cli/commands/run.js");
const loaded = process.cpuUsage(startup);

const printed: Buffer[] = [];
const capture = new Writable({
	write(chunk: Buffer, _encoding, callback) {
		printed.push(chunk);
		callback();
	},
});

const meter = startMeter();
const exitCode = await main(["run", config.jobFile, "--out", config.outDir, "--quiet"], {
	stdout: capture,
	stderr: capture,
	env: process.env,
	cwd: process.cwd(),
	exitCode: 0,
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
