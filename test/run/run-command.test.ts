import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createScraperClient } from "../../src/api/index.js";
import { runJobFile } from "../../src/index.js";
import { isRunFolderName, readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** A job file of `paths` on the demo site, with fast retries for tests. */
function jobYaml(site: string, paths: string[], extra = ""): string {
	return [
		"name: shop",
		"retry:",
		"  attempts: 4",
		"  backoff_ms: 5",
		"  max_backoff_ms: 20",
		extra,
		"targets:",
		...paths.map((path) => `  - ${path.startsWith("{") ? path.replace("URL", `${site}`) : `${site}${path}`}`),
		"",
	].join("\n");
}

/** A scenario pattern matching URLs that end in `path` (the emulator reads `/…/` as a regex). */
function endsWith(path: string): string {
	return `/${path.replace(/[/.?]/g, "\\$&")}$/`;
}

function onlyRun(out: string, job = "shop"): string {
	const runs = readdirSync(join(out, job)).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(out, job, runs[0]!);
}

describe("scrapejob run against the emulator", () => {
	it("fetches every target once, within the account's concurrency, and accounts for every credit", async () => {
		service = await startTestService({ concurrency: 4, latency_ms: 15 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 24 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(
			dir,
			"shop",
			jobYaml(
				service.site.url,
				paths,
				"defaults:\n  mode: request\noutput:\n  formats: [jsonl, csv]\n  content: files",
			),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);

		const runDir = onlyRun(out);
		const records = readRecords(runDir);
		expect(records).toHaveLength(24);
		expect(new Set(records.map((record) => record.url)).size).toBe(24);
		expect(records.every((record) => record.status === "ok" && record.http_status === 200)).toBe(true);
		expect(records.every((record) => record.mode_used === "request" && record.credits_used === 2)).toBe(true);
		const first = records.find((record) => record.url.endsWith("/product/1"))!;
		expect(readFileSync(join(runDir, first.content_path!), "utf8")).toContain("<html");
		expect(
			readCsv(runDir)
				.map((row) => row.id)
				.sort(),
		).toEqual(records.map((record) => record.id).sort());

		const ledger = service.emulator.ledger;
		expect(ledger.maxInFlight()).toBeLessThanOrEqual(4);
		expect(ledger.maxInFlight()).toBeGreaterThan(1);
		expect(ledger.byEndpoint("realtime")).toHaveLength(24);
		const charged = ledger.totalCharged();
		expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(charged);

		const summary = readSummary(runDir);
		expect(summary.complete).toBe(true);
		expect(summary.targets).toMatchObject({
			total: 24,
			done: 24,
			remaining: 0,
			by_status: { ok: 24, failed: 0, skipped: 0 },
		});
		expect(summary.credits.used).toBe(charged);
		expect(summary.credits.remaining).toBe(service.emulator.credits());
		expect(summary.concurrency).toBe(4);
		expect(result.stdout).toContain("24 of 24 done: 24 ok");
		expect(readFileSync(join(runDir, "run.log"), "utf8")).not.toContain(service.emulator.scraperKey);
	});

	it("retries 5xx and dropped connections, never DNS failures or the target's own 404", async () => {
		service = await startTestService({
			concurrency: 3,
			faults: [
				{ kind: "unavailable", match: endsWith("/product/1"), times: 2 },
				{ kind: "scraping_error", match: endsWith("/product/2"), times: 1, message: "Page crashed" },
				{ kind: "drop_connection", match: endsWith("/product/3"), times: 1 },
				{ kind: "dns_failure", match: endsWith("/product/4") },
				{ kind: "scraping_error", match: endsWith("/product/5"), message: "Navigation timeout" },
				{ kind: "bad_gateway", match: endsWith("/product/6") },
			],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"shop",
			jobYaml(
				service.site.url,
				["/product/1", "/product/2", "/product/3", "/product/4", "/product/5", "/product/6", "/missing-page"],
				"defaults:\n  mode: request",
			),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(1);
		const records = readRecords(onlyRun(out));
		const byPath = new Map(records.map((record) => [new URL(record.url).pathname, record]));
		expect(records).toHaveLength(7);
		expect(byPath.get("/product/1")).toMatchObject({ status: "ok", attempts: 3 });
		expect(byPath.get("/product/2")).toMatchObject({ status: "ok", attempts: 2 });
		expect(byPath.get("/product/3")).toMatchObject({ status: "ok", attempts: 2 });
		expect(byPath.get("/product/4")).toMatchObject({
			status: "failed",
			error: "dns_failed",
			attempts: 1,
			http_status: 500,
		});
		// A navigation timeout is retried with backoff, each retry asking for a longer wait_seconds (the service's advice).
		expect(byPath.get("/product/5")).toMatchObject({ status: "failed", error: "navigation_timeout", attempts: 4 });
		const navigationWaits = service.emulator.ledger
			.byEndpoint("realtime")
			.filter((entry) => String(entry.params?.url).endsWith("/product/5"))
			.map((entry) => entry.params?.wait_seconds);
		expect(navigationWaits).toEqual([undefined, 5, 10, 20]);
		// A 502 is a service-down sign: one following another service-down failure is free (maybe an outage), so
		// /product/6 may be sent more than 4 times; it fails once 4 attempts counted.
		expect(byPath.get("/product/6")).toMatchObject({ status: "failed", error: "http_502" });
		expect(byPath.get("/product/6")!.attempts).toBeGreaterThanOrEqual(4);
		expect(byPath.get("/missing-page")).toMatchObject({
			status: "failed",
			error: "target_http_404",
			http_status: 404,
			attempts: 1,
			credits_used: 0,
		});

		// The ledger agrees: exactly the attempts recorded reached the service.
		const requests = service.emulator.ledger.byEndpoint("realtime");
		for (const record of records) {
			expect(requests.filter((entry) => entry.url === record.url)).toHaveLength(record.attempts);
		}
		expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(service.emulator.ledger.totalCharged());
		const summary = readSummary(onlyRun(out));
		expect(summary.retries).toBe(records.reduce((sum, record) => sum + record.attempts - 1, 0));
		expect(summary.errors_by_kind).toEqual({ dns_failed: 1, navigation_timeout: 1, http_502: 1, target_http_404: 1 });
	});

	it("pauses the whole queue for a 429's reset and sends nothing inside the window", async () => {
		service = await startTestService({
			concurrency: 4,
			latency_ms: 10,
			reset_seconds: 1,
			faults: [{ kind: "rate_limit", match: endsWith("/product/3"), times: 1, count: 3 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 16 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "defaults:\n  mode: request"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		const ledger = service.emulator.ledger;
		expect(ledger.rateLimits.length).toBeGreaterThanOrEqual(1);
		for (const window of ledger.rateLimits) {
			// Requests already on the wire when the 429 was sent may still arrive a moment later.
			const inside = ledger
				.requestsDuring(window.at + 50, window.untilMs)
				.filter((entry) => entry.endpoint === "realtime");
			expect(inside).toEqual([]);
		}
		const records = readRecords(onlyRun(out));
		expect(records).toHaveLength(16);
		expect(records.every((record) => record.status === "ok" && record.attempts === 1)).toBe(true);
		const summary = readSummary(onlyRun(out));
		expect(summary.rate_limit_pauses).toBeGreaterThanOrEqual(1);
		expect(summary.rate_limit_pauses).toBeLessThanOrEqual(ledger.rateLimits.length);
	});

	it("shares the key politely: with another client holding slots, X-RateLimit-Remaining holds new sends (no 429)", async () => {
		service = await startTestService({ concurrency: 3, latency_ms: 20, reset_seconds: 1 });
		const other = createScraperClient({
			scraperKey: service.emulator.scraperKey,
			baseUrl: service.emulator.scraperUrl,
		});
		// Another program using the same key holds two of its three slots for a while.
		const busy = [1, 2].map(() => other.realtime({ url: `${service!.site.url}/slow?ms=700`, mode: "request" }));
		// Wait until the service holds both (an event on its ledger, not a guessed delay).
		const holding = () =>
			service!.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.finishedAt === null).length;
		while (holding() < 2) await new Promise((resolve) => setTimeout(resolve, 5));
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 12 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "defaults:\n  mode: request"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		await Promise.all(busy);
		expect(result.code).toBe(0);
		expect(readRecords(onlyRun(out))).toHaveLength(12);
		const ledger = service.emulator.ledger;
		expect(ledger.statusCounts()[429]).toBeUndefined();
		expect(ledger.maxInFlight(service.emulator.scraperKey)).toBeLessThanOrEqual(3);
		expect(ledger.byEndpoint("health")).toHaveLength(1);
	});

	it("follows fetches that outlive the timeout, and async ones, as tasks", async () => {
		service = await startTestService({ concurrency: 3, timeout_ms: 60 });
		const dir = tempDir();
		const out = join(dir, "out");
		const site = service.site.url;
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"defaults:",
				"  mode: request",
				"output:",
				"  content: inline",
				"targets:",
				`  - ${site}/slow?ms=200`,
				`  - url: ${site}/product/7`,
				"    async: true",
				`  - ${site}/product/8`,
				`  - url: ${site}/gone`,
				"    async: true",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet", "--task-poll-ms", "20"], { env: service.env });
		expect(result.code).toBe(1);
		const records = readRecords(onlyRun(out));
		// A task that failed on the target's own 404 is final, like a realtime passthrough.
		expect(records.find((record) => record.url.endsWith("/gone"))).toMatchObject({
			status: "failed",
			error: "target_http_404",
			http_status: 404,
			attempts: 1,
		});
		const slow = records.find((record) => record.url.includes("/slow"))!;
		const asyncOne = records.find((record) => record.url.endsWith("/product/7"))!;
		const plain = records.find((record) => record.url.endsWith("/product/8"))!;
		expect(slow).toMatchObject({ status: "ok", credits_used: 2 });
		expect(slow.task_id).toBeTruthy();
		expect(asyncOne.task_id).toBeTruthy();
		expect(asyncOne.content).toContain("Product 7");
		expect(plain.task_id).toBeNull();
		expect(service.emulator.ledger.byEndpoint("task").length).toBeGreaterThanOrEqual(2);
		expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(service.emulator.ledger.totalCharged());
		const journal = readFileSync(join(onlyRun(out), "journal.jsonl"), "utf8");
		expect(journal).toContain(`"task_id":"${slow.task_id}"`);
		expect(readSummary(onlyRun(out)).tasks).toMatchObject({ created: 3, completed: 2, failed: 1 });
	});

	it("stops cleanly on 402, keeps what it has, and exits 3", async () => {
		service = await startTestService({ concurrency: 1, credits: 9 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 8 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "defaults:\n  mode: request"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(3);
		const runDir = onlyRun(out);
		const records = readRecords(runDir);
		expect(records).toHaveLength(4);
		expect(records.every((record) => record.status === "ok")).toBe(true);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: false, stopped_reason: "insufficient_credits" });
		expect(summary.targets.remaining).toBe(4);
		const statuses = service.emulator.ledger.byEndpoint("realtime").map((entry) => entry.status);
		expect(statuses.filter((status) => status === 402)).toHaveLength(1);
		expect(statuses).toHaveLength(5);
	});

	it("refuses to resume a run whose job's targets changed, unless --force", async () => {
		service = await startTestService({ concurrency: 1, credits: 5 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = ["/product/1", "/product/2", "/product/3", "/product/4"];
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "defaults:\n  mode: request"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(3);
		expect(readRecords(onlyRun(out))).toHaveLength(2);

		writeJob(
			dir,
			"shop",
			jobYaml(service.site.url, [...paths.slice(0, 3), "/product/9"], "defaults:\n  mode: request"),
		);
		service.emulator.setCredits(100);
		const refused = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain("targets changed");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(3);

		const forced = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--force"], { env: service.env });
		expect(forced.stderr).toBe("");
		expect(forced.code).toBe(0);
		const records = readRecords(onlyRun(out));
		expect(records.map((record) => new URL(record.url).pathname)).toEqual([
			"/product/1",
			"/product/2",
			"/product/3",
			"/product/9",
		]);
		const charged = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0);
		expect(charged.map((entry) => new URL(entry.url!).pathname)).toEqual([
			"/product/1",
			"/product/2",
			"/product/3",
			"/product/9",
		]);
	});

	it("a --force resume that changed every target counts only the job's targets as done: stopped early it is incomplete, and its printed resume finishes it without --force, paying each new target once", async () => {
		service = await startTestService({ concurrency: 1 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = ["/product/1", "/product/2", "/product/3", "/product/4"];
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "max_credits: 4\ndefaults:\n  mode: request"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		expect(readRecords(onlyRun(out))).toHaveLength(2);

		// Another proxy: every target is a new one. The forced session's budget lets three of the four go.
		writeJob(
			dir,
			"shop",
			jobYaml(service.site.url, paths, "max_credits: 4\ndefaults:\n  mode: request\n  proxy_type: residential"),
		);
		const forced = await runCli(["run", job, "--out", out, "--resume", "--force", "--max-credits", "10"], {
			env: service.env,
		});
		expect(forced.code, forced.stderr).toBe(1);
		const runDir = onlyRun(out);
		expect(readSummary(runDir)).toMatchObject({
			complete: false,
			stopped_reason: "budget_exhausted",
			targets: { total: 4, done: 3, remaining: 1, superseded: 2 },
		});
		expect(forced.stdout).toMatch(/targets +3 of 4 done: 5 ok, 0 failed, 0 skipped; 2 records of replaced targets/);
		// The hint: the one target left at 2 credits above the 10 spent; no --force, the run is the job's now.
		const hint = /remaining +1 target: finish with `npx scrapejob (run [^`]*)`/.exec(forced.stdout)?.[1];
		expect(hint).toMatch(/^run \S+ --out \S+ --resume --max-credits 12$/);
		// Finished through the library as the hint says (no force, the budget it names): the progress it
		// reports counts the job's targets only.
		const progress: Array<{ done: number; total: number }> = [];
		const finished = await runJobFile(job, {
			out,
			resume: true,
			maxCredits: 12,
			env: service.env,
			onProgress: ({ done, total }) => progress.push({ done, total }),
		});
		expect(finished).toMatchObject({ complete: true, targets: { done: 4, remaining: 0, superseded: 2 } });
		expect(progress.at(-1)).toEqual({ done: 4, total: 4 });
		expect(readSummary(runDir)).toMatchObject({ complete: true, targets: { done: 4, remaining: 0, superseded: 2 } });
		const charged = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0);
		// Two on datacenter-or-default addresses before the change, then each of the four once.
		expect(charged).toHaveLength(6);
		expect(new Set(charged.slice(2).map((entry) => entry.url)).size).toBe(4);
	});

	it("stops at max_credits with no record for the rest; --resume --max-credits <larger> finishes the run", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 6 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "max_credits: 7\ndefaults:\n  mode: request"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(1);
		const runDir = onlyRun(out);
		// Three fit in 7 credits; no fetch started whose worst case (2) would not; the rest have no record.
		expect(readRecords(runDir).map((record) => record.status)).toEqual(["ok", "ok", "ok"]);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "budget_exhausted" });
		expect(result.stdout).toContain("--resume");
		expect(service.emulator.ledger.totalCharged()).toBe(6);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(3);

		// The budget is the run's total: a larger one lets the resumed run finish, paying only for the rest.
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "12"], {
			env: service.env,
		});
		expect(resumed.code).toBe(0);
		expect(readRecords(runDir).filter((record) => record.status === "ok")).toHaveLength(6);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: true, stopped_reason: null, credits: { used: 12 } });
		// Whole-run figures at the top level; this session's under `session` (issue 10.7).
		expect(summary.session).toMatchObject({ done: 3, credits_used: 6 });
		expect(summary.targets.done).toBe(6);
		expect(summary.wall_ms).toBeGreaterThanOrEqual(summary.session!.wall_ms);
		expect(Date.parse(summary.started_at)).toBeLessThan(Date.parse(summary.session!.started_at));
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(6);
	});

	it("--max-credits 0 and max_credits: 0 are one rule: nothing may be spent, nothing is sent", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const paths = ["/product/1", "/product/2"];
		const flagJob = writeJob(dir, "flag", jobYaml(service.site.url, paths).replace("name: shop", "name: flag"));
		const keyJob = writeJob(
			dir,
			"key",
			jobYaml(service.site.url, paths, "max_credits: 0").replace("name: shop", "name: key"),
		);
		for (const [job, extra] of [
			[flagJob, ["--max-credits", "0"]],
			[keyJob, []],
		] as const) {
			const out = join(dir, `out-${extra.length}`);
			const result = await runCli(["run", job, "--out", out, "--quiet", ...extra], { env: service.env });
			expect(result.code).toBe(1);
			const name = extra.length ? "flag" : "key";
			const runDir = onlyRun(out, name);
			expect(readRecords(runDir)).toEqual([]);
			expect(readSummary(runDir).stopped_reason).toBe("budget_exhausted");
		}
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});

	it("clamps a job's concurrency to the account's limit with a warning", async () => {
		service = await startTestService({ concurrency: 2, latency_ms: 20 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 10 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "concurrency: 50\ndefaults:\n  mode: request"));
		const result = await runCli(["run", job, "--out", out], { env: service.env });
		expect(result.code).toBe(0);
		expect(result.stderr).toContain("above the account's limit");
		expect(service.emulator.ledger.maxInFlight()).toBe(2);
		expect(service.emulator.ledger.statusCounts()[429]).toBeUndefined();
	});

	it("with only a scraper key, learns the limit from X-RateLimit-Limit", async () => {
		service = await startTestService({ concurrency: 3, latency_ms: 20 });
		const dir = tempDir();
		const out = join(dir, "out");
		const paths = Array.from({ length: 20 }, (_, index) => `/product/${index + 1}`);
		const job = writeJob(dir, "shop", jobYaml(service.site.url, paths, "defaults:\n  mode: request"));
		const env = {
			SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey,
			SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl,
		};
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env });
		expect(result.code).toBe(0);
		expect(service.emulator.ledger.byEndpoint("account/scraper")).toHaveLength(0);
		expect(service.emulator.ledger.maxInFlight()).toBe(3);
		expect(service.emulator.ledger.statusCounts()[429]).toBeUndefined();
	});

	it("refuses to start without a key, with a wrong key, or with a bad job — sending nothing", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobYaml(service.site.url, ["/product/1"]));

		const noKey = await runCli(["run", job, "--out", out], { env: {} });
		expect(noKey.code).toBe(2);
		expect(noKey.stderr).toContain("--sandbox");

		const wrongKey = await runCli(["run", job, "--out", out], {
			env: { ...service.env, SCRAPEJOB_ACCOUNT_KEY: "wrong-key-123456" },
		});
		expect(wrongKey.code).toBe(3);
		expect(wrongKey.stderr).toMatch(/401/);
		expect(wrongKey.stderr).not.toContain("wrong-key-123456");

		const bad = writeJob(dir, "bad", "name: bad\nconcurency: 3\ntargets:\n  - ftp://x\n");
		const invalid = await runCli(["run", bad, "--out", out], { env: service.env });
		expect(invalid.code).toBe(2);
		expect(invalid.stderr).toMatch(/bad\.yaml:2:1 .*concurrency/);

		const plainHttp = await runCli(["run", job, "--out", out], {
			env: { ...service.env, SCRAPEJOB_API_URL: "http://api.example.com" },
		});
		expect(plainHttp.code).toBe(2);
		expect(plainHttp.stderr).toContain("HTTPS");

		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
		expect(existsSync(join(out, "shop"))).toBe(false);
	});

	it("--json prints one summary line per job, and runs several jobs in turn", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const first = writeJob(
			dir,
			"shop",
			jobYaml(service.site.url, ["/product/1", "/product/2"], "defaults:\n  mode: request"),
		);
		const second = writeJob(
			dir,
			"blog",
			jobYaml(service.site.url, ["/page/1"], "defaults:\n  mode: request").replace("name: shop", "name: blog"),
		);
		const result = await runCli(["run", first, second, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(result.code).toBe(0);
		const summaries = result.stdout
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line) as { job: string; complete: boolean; run_dir: string });
		expect(summaries.map((summary) => [summary.job, summary.complete])).toEqual([
			["shop", true],
			["blog", true],
		]);
		expect(readRecords(summaries[1]!.run_dir)).toHaveLength(1);
	});

	it("interrupted before the first fetch, it exits 130 leaving no run folder and sending nothing", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobYaml(service.site.url, ["/product/1"]));
		const controller = new AbortController();
		controller.abort(new Error("received SIGINT"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env, signal: controller.signal });
		expect(result.code).toBe(130);
		expect(existsSync(join(out, "shop"))).toBe(false);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});

	it("--dry-run estimates the cost and fetches nothing", async () => {
		service = await startTestService();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"shop",
			jobYaml(
				service.site.url,
				["/product/1", "/product/2", "{url: URL/product/3, mode: browser}"],
				"defaults:\n  mode: auto",
			),
		);
		const result = await runCli(["run", job, "--dry-run", "--out", join(dir, "out")], { env: service.env });
		expect(result.code).toBe(0);
		expect(result.stdout).toContain("3 targets");
		const listed = result.stdout.split("\n").filter((line) => line.includes("\t"));
		expect(listed.map((line) => line.split("\t").slice(1))).toEqual([
			["auto", `${service.site.url}/product/1`],
			["auto", `${service.site.url}/product/2`],
			["browser", `${service.site.url}/product/3`],
		]);
		expect(result.stdout).toContain("9–17 credits");
		// One free look-up of the balance; nothing fetched.
		expect(service.emulator.ledger.requestCount).toBe(1);
		expect(service.emulator.ledger.byEndpoint("account/scraper")).toHaveLength(1);
	});
});
