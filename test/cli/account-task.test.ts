import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScraperClient, type ScraperClient } from "../../src/api/index.js";
import { sleep } from "../../src/common/index.js";
import { type DemoSite, type Emulator, startDemoSite, startEmulator } from "../../src/emulator/index.js";
import { runCli } from "./cli-harness.js";

let emulator: Emulator;
let site: DemoSite;
let scraper: ScraperClient;
let env: NodeJS.ProcessEnv;
let tempDir: string;

beforeAll(async () => {
	site = await startDemoSite({});
	emulator = await startEmulator({
		port: 0,
		scenario: { faults: [{ kind: "scraping_error", match: "/product/2", message: "Navigation timeout" }] },
	});
	scraper = createScraperClient({ scraperKey: emulator.scraperKey, baseUrl: emulator.scraperUrl });
	env = { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey };
	tempDir = await mkdtemp(join(tmpdir(), "scrapejob-task-"));
});

afterAll(async () => {
	await emulator.close();
	await site.close();
	await rm(tempDir, { recursive: true, force: true });
});

async function submit(path: string): Promise<string> {
	const outcome = await scraper.realtime({ url: `${site.url}${path}`, mode: "request", async: true });
	if (outcome.kind !== "task") throw new Error(`expected a task, got ${outcome.kind}`);
	return outcome.task.task_id;
}

/** Ask the CLI until the task has left `processing` (the demo page answers at once; a few ms suffice). */
async function settled(taskId: string): Promise<Record<string, unknown>> {
	for (let attempt = 0; attempt < 100; attempt++) {
		const run = await runCli(["task", taskId, "--json"], { env });
		const state = JSON.parse(run.stdout) as Record<string, unknown>;
		if (state.state !== "pending") return state;
		await sleep(10);
	}
	throw new Error(`task ${taskId} did not finish`);
}

describe("scrapejob task", () => {
	it("shows a running task as pending (exit 0)", async () => {
		const taskId = await submit("/slow?ms=3000");
		const run = await runCli(["task", taskId], { env });
		expect(run.code).toBe(0);
		expect(run.stdout).toBe(`task ${taskId}: processing (still running; ask again later)\n`);
		const json = await runCli(["task", taskId, "--json"], { env });
		expect(JSON.parse(json.stdout)).toEqual({ task_id: taskId, state: "pending", status: "processing" });
	});

	it("shows a finished task's figures and content, as text and as JSON", async () => {
		const taskId = await submit("/product/1");
		const state = await settled(taskId);
		expect(state).toMatchObject({
			task_id: taskId,
			state: "completed",
			target_status: 200,
			mode_used: "request",
			credits_used: 2,
		});
		expect(typeof state.credits_remaining).toBe("number");
		expect(state.content).toContain("<html");
		expect(state.bytes).toBe(Buffer.byteLength(state.content as string));

		const run = await runCli(["task", taskId], { env });
		expect(run.code).toBe(0);
		expect(run.stdout).toContain(`task ${taskId}: completed\n`);
		expect(run.stdout).toMatch(/target status\s+200\n/);
		expect(run.stdout).toMatch(/mode used\s+request\n/);
		expect(run.stdout).toMatch(/credits used\s+2\n/);
		expect(run.stdout).toContain(`content        ${state.bytes} bytes\n--- content ---\n`);
		expect(run.stdout).toContain(state.content as string);
		expect(run.stdout).not.toContain(emulator.scraperKey);
	});

	it("--out saves the content to a file", async () => {
		const taskId = await submit("/product/3");
		const state = await settled(taskId);
		const run = await runCli(["task", taskId, "--out", "page.html"], { env, cwd: tempDir });
		expect(run.code).toBe(0);
		const path = join(tempDir, "page.html");
		expect(await readFile(path, "utf8")).toBe(state.content);
		expect(run.stdout).toContain(`${state.bytes} bytes saved to ${path}`);
		expect(run.stdout).not.toContain("<html");
		const json = await runCli(["task", taskId, "--out", "again.html", "--json"], { env, cwd: tempDir });
		const saved = JSON.parse(json.stdout);
		expect(saved.content_path).toBe(join(tempDir, "again.html"));
		expect(saved.content).toBeUndefined();
	});

	it("shows a failed task with the service's error (exit 1)", async () => {
		const taskId = await submit("/product/2");
		const state = await settled(taskId);
		expect(state).toMatchObject({
			task_id: taskId,
			state: "failed",
			message: expect.stringContaining("Navigation timeout"),
		});
		const run = await runCli(["task", taskId], { env });
		expect(run.code).toBe(1);
		expect(run.stdout).toContain(`task ${taskId}: failed`);
		expect(run.stdout).toContain("Navigation timeout");
	});

	it("reports an unknown task id (exit 1) and refuses a malformed one (exit 2)", async () => {
		const run = await runCli(["task", "no-such-task"], { env });
		expect(run.code).toBe(1);
		expect(run.stdout).toContain("task no-such-task: not found");
		const bad = await runCli(["task", "../etc"], { env });
		expect(bad.code).toBe(2);
		expect(bad.stderr).toContain('TASK_ID must be a task id without spaces or slashes (got "../etc")');
		const missing = await runCli(["task"], { env });
		expect(missing.code).toBe(2);
	});

	it("with --sandbox, a task not found says that the sandbox's emulator holds no task of an earlier run", async () => {
		const run = await runCli(["task", "task_7a2ce73d5b89a9bb", "--sandbox"], { cwd: tempDir });
		expect(run.code).toBe(1);
		expect(run.stdout).toContain("task task_7a2ce73d5b89a9bb: not found");
		expect(run.stderr).toMatch(
			/--sandbox starts an empty emulator for each command, so no task of an earlier run is in it/,
		);
		expect(run.stderr).toContain("npx scrapejob emulator --demo-site");
	});
});
