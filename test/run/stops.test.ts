import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, BIN, spawnCli } from "../helpers/spawn-cli.js";

let service: TestService | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/**
 * Three fast targets, then `slow` ones the emulator holds for 20 s (the first three of them only). The
 * key has 6 slots and the job uses 3: the abandoned fetches keep theirs at the service for a while.
 */
async function slowService(): Promise<TestService> {
	return startTestService({
		concurrency: 6,
		faults: [{ kind: "slow", match: "/page/", delay_ms: 20_000, times: 3 }],
	});
}

function jobYaml(site: string, slow: number): string {
	return [
		"name: shop",
		"concurrency: 3",
		"defaults:",
		"  mode: request",
		"targets:",
		...[1, 2, 3].map((index) => `  - ${site}/product/${index}`),
		...Array.from({ length: slow }, (_, index) => `  - ${site}/page/${index + 1}`),
		"",
	].join("\n");
}

function runDirOf(out: string): string {
	return join(out, "shop", readdirSync(join(out, "shop")).find(isRunFolderName)!);
}

/** Resolve once `read()` holds `text` (output arrives in chunks; no fixed sleeps). */
async function waitFor(read: () => string, text: string | RegExp, timeoutMs = 15_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!(typeof text === "string" ? read().includes(text) : text.test(read()))) {
		if (Date.now() > deadline) throw new Error(`no ${String(text)} within ${timeoutMs} ms in:\n${read()}`);
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
}

describe("stops: what a user sees when in-flight fetches are given up", () => {
	it("grace period over with fetches in flight: they are counted as abandoned and said so; --resume finishes", async () => {
		service = await slowService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobYaml(service.site.url, 3));
		const args = ["run", job, "--out", out, "--grace-period", "300"];
		const first = spawnCli(args, service.env);
		let stderr = "";
		first.child.stderr?.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		// The three fast ones are done and the three slow ones are on the wire.
		await waitFor(() => (existsSync(join(out, "shop")) ? readSummaryless(out) : ""), /(.*\n){3}/);
		await waitFor(() => String(service?.emulator.ledger.byEndpoint("realtime").length), "6");
		first.child.kill("SIGINT");
		const ended = await first.done;
		expect(ended.code).toBe(130);
		const runDir = runDirOf(out);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({
			complete: false,
			stopped_reason: "interrupted",
			abandoned: 3,
			session: { abandoned: 3 },
			targets: { done: 3 },
		});
		expect(ended.stdout).toMatch(
			/abandoned +3 fetches abandoned when the run stopped; the service may still charge them/,
		);
		expect(stderr).toContain("stop requested");
		expect(readRecords(runDir)).toHaveLength(3);

		// The abandoned targets have no record: --resume fetches them (the slow fault is spent).
		const resumed = await spawnCli([...args, "--resume", "--quiet"], service.env).done;
		expect(resumed.code).toBe(0);
		expect(readRecords(runDir)).toHaveLength(6);
		// The run's figure keeps the first session's abandoned fetches; this session abandoned none.
		expect(readSummary(runDir)).toMatchObject({ complete: true, abandoned: 3, session: { abandoned: 0 } });
		expect(resumed.stdout).not.toContain("abandoned");
	}, 40_000);

	it("Ctrl-C with targets waiting on per_host_delay: exit 130 at once, the waiting ones left for --resume, not waited out one delay after another", async () => {
		service = await startTestService({ concurrency: 3 });
		const dir = tempDir();
		const out = join(dir, "out");
		// Three pages of one host, 20 s apart: the stop came 37 s later, each waiting page's delay waited out.
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"per_host_delay: 20s",
				"defaults:",
				"  mode: request",
				"targets:",
				...[1, 2, 3].map((index) => `  - ${service!.site.url}/product/${index}`),
				"",
			].join("\n"),
		);
		const run = spawnCli(["run", job, "--out", out, "--quiet", "--grace-period", "10000"], service.env);
		await waitFor(() => (existsSync(join(out, "shop")) ? readSummaryless(out) : ""), /\n/);
		const stoppedAt = Date.now();
		run.child.kill("SIGINT");
		const ended = await run.done;
		expect(ended.code, ended.stderr).toBe(130);
		// Nothing was in flight: the stop needs neither the grace period nor the next page's delay.
		expect(Date.now() - stoppedAt).toBeLessThan(5_000);
		const runDir = runDirOf(out);
		expect(readRecords(runDir)).toHaveLength(1);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "interrupted", abandoned: 0 });
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(1);
	}, 30_000);

	it("Ctrl-C after the last target went out, its fetch finishing in the grace period: the run is complete, exit 0, no resume hint", async () => {
		service = await startTestService({
			concurrency: 6,
			faults: [{ kind: "slow", match: "/page/", delay_ms: 1500, times: 1 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobYaml(service.site.url, 1));
		const run = spawnCli(["run", job, "--out", out], service.env);
		// Every target is on the wire or done: nothing is left for the queue to hand out.
		await waitFor(() => String(service?.emulator.ledger.byEndpoint("realtime").length), "4");
		run.child.kill("SIGINT");
		const ended = await run.done;
		const runDir = runDirOf(out);
		expect(readRecords(runDir)).toHaveLength(4);
		expect(readSummary(runDir)).toMatchObject({
			complete: true,
			stopped_reason: null,
			abandoned: 0,
			targets: { done: 4, remaining: 0 },
		});
		expect(ended.stdout).not.toContain("INCOMPLETE");
		expect(ended.stdout).not.toContain("--resume");
		expect(ended.code).toBe(0);
	}, 40_000);

	it.skipIf(!existsSync("/usr/bin/script"))(
		"second Ctrl-C in a terminal: the bar ends its line, one line says what happened, summary.json is written, exit 130",
		async () => {
			service = await slowService();
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(dir, "shop", jobYaml(service.site.url, 6));
			// `script` gives the CLI a real terminal; Ctrl-C typed into it reaches the CLI as SIGINT.
			const command = [process.execPath, BIN, "run", job, "--out", out, "--grace-period", "30000"].join(" ");
			const child = spawn("script", ["-qfec", command, "/dev/null"], {
				env: { PATH: process.env.PATH, TERM: "xterm", ...service.env },
				stdio: ["pipe", "pipe", "pipe"],
			});
			let screen = "";
			child.stdout.on("data", (chunk: Buffer) => {
				screen += chunk.toString();
			});
			const closed = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
			await waitFor(() => screen, "3/9");
			await waitFor(() => String(service?.emulator.ledger.byEndpoint("realtime").length), "6");
			child.stdin.write("\x03");
			await waitFor(() => screen, "stop requested");
			const second = Date.now();
			child.stdin.write("\x03");
			const code = await closed;
			expect(code).toBe(130);
			expect(Date.now() - second).toBeLessThan(5000);

			const runDir = runDirOf(out);
			const last = screen.slice(screen.lastIndexOf("scrapejob: stopped at once"));
			expect(last).toMatch(
				/^scrapejob: stopped at once \(SIGINT again\); records written so far are kept; summary\.json written in .+; 3 fetches in flight abandoned \(the service may still charge them\); finish with `npx scrapejob run .+ --resume`\r?\n$/,
			);
			// The bar's line was ended before that line: the shell prompt after it starts on a line of its own.
			const before = screen.slice(0, screen.lastIndexOf("scrapejob: stopped at once"));
			expect(before).toMatch(/\n$/);
			expect(before.lastIndexOf("\x1b[?25h")).toBeGreaterThan(before.lastIndexOf("\x1b[?25l"));
			expect(readSummary(runDir)).toMatchObject({
				complete: false,
				stopped_reason: "interrupted",
				abandoned: 3,
				targets: { done: 3 },
			});
			expect(readRecords(runDir)).toHaveLength(3);
			expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
			// run.log holds its last second too (batched, written as the process exits): the first Ctrl-C's line.
			expect(readFileSync(join(runDir, "run.log"), "utf8")).toContain('"event":"run_stopping","reason":"interrupted"');
		},
		40_000,
	);
});

/** results.jsonl of the job's only run, or "" before it exists. */
function readSummaryless(out: string): string {
	const runs = readdirSync(join(out, "shop")).filter(isRunFolderName);
	const file = runs[0] ? join(out, "shop", runs[0], "results.jsonl") : "";
	return file && existsSync(file) ? readFileSync(file, "utf8") : "";
}
