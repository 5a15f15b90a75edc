import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runJobFile } from "../../src/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/**
 * A run fetches on as many sockets as it has fetches in flight, no more. An unlimited undici pool
 * opened a spare socket whenever a fetch started in the microtask between another's end and its
 * socket's release: a run at concurrency 50 ended on 100 sockets, each with its own parser and buffers.
 */
const LIMIT = 4;
const TARGETS = 300;

describe("sockets to the service", () => {
	let service: TestService;
	let dir: string;
	let job: string;

	beforeAll(async () => {
		assertBuilt();
		service = await startTestService({ concurrency: LIMIT, latency_ms: 2 });
		dir = tempDir();
		const urls = Array.from({ length: TARGETS }, (_, page) => `  - ${service.site.url}/page/${page + 1}`);
		job = writeJob(
			dir,
			"sockets",
			["name: sockets", "defaults:", "  mode: request", "targets:", ...urls, ""].join("\n"),
		);
	});
	afterAll(async () => {
		await service?.close();
	});

	it("a run at the account's concurrency opens at most that many sockets for its fetches", async () => {
		const before = service.emulator.connectionsAccepted();
		const { done } = spawnCli(["run", job, "--out", `${dir}/out-cli`, "--quiet"], service.env, dir);
		const { code, stderr } = await done;
		expect(stderr).toBe("");
		expect(code).toBe(0);
		// One more for the account's look-up (GET /public/scraper), on the account client's own socket.
		expect(service.emulator.connectionsAccepted() - before).toBeLessThanOrEqual(LIMIT + 1);
	});

	it("so does a run started from the library", async () => {
		const before = service.emulator.connectionsAccepted();
		const summary = await runJobFile(job, { env: service.env, out: `${dir}/out-library`, cwd: dir });
		expect(summary.targets.by_status.ok).toBe(TARGETS);
		expect(service.emulator.connectionsAccepted() - before).toBeLessThanOrEqual(LIMIT + 1);
	});
});
