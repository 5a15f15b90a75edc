import { createServer, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { notifyRunEnd, signature } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { listenForTest } from "../helpers/loopback.js";
import { record } from "../helpers/records.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

interface Received {
	headers: IncomingHttpHeaders;
	body: string;
}

async function receiver(status = 200): Promise<{ url: string; received: Received[] }> {
	const received: Received[] = [];
	const server = createServer((req, res) => {
		let body = "";
		req.on("data", (chunk: Buffer) => {
			body += chunk.toString();
		});
		req.on("end", () => {
			received.push({ headers: req.headers, body });
			res.writeHead(status);
			res.end();
		});
	});
	const origin = await listenForTest(server);
	return { url: `${origin}/hook`, received };
}

describe("notifications when a run ends", () => {
	it("POSTs the summary signed with HMAC-SHA256 of the body; the receiver can verify it", async () => {
		const service = await useTestService();
		const hook = await receiver();
		const dir = tempDir();
		const secret = "notify-secret-0123456789";
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"defaults:",
				"  mode: request",
				"notify:",
				`  url: ${hook.url}`,
				// biome-ignore lint/suspicious/noTemplateCurlyInString: `${VAR}` is the job format's own syntax
				"  secret: ${HOOK_SECRET}",
				"targets:",
				`  - ${service.site.url}/product/1`,
				`  - ${service.site.url}/missing`,
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", join(dir, "out"), "--quiet"], {
			env: { ...service.env, HOOK_SECRET: secret },
		});
		expect(result.code).toBe(1);
		expect(hook.received).toHaveLength(1);
		const [post] = hook.received;
		expect(post!.headers["x-scrapejob-signature"]).toBe(signature(post!.body, secret));
		expect(post!.headers["x-scrapejob-signature"]).not.toBe(signature(post!.body, "another-secret"));
		expect(JSON.parse(post!.body)).toMatchObject({
			event: "failed",
			job: "shop",
			targets: { by_status: { ok: 1, failed: 1 } },
		});
		expect(post!.body).not.toContain(secret);
	});

	it("a run stopped early (max_credits reached) sends `stopped` with its reason", async () => {
		const service = await useTestService();
		const hook = await receiver();
		const dir = tempDir();
		const targets = [1, 2, 3].map((n) => `  - ${service.site.url}/product/${n}`);
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults:", "  mode: request", "targets:", ...targets, ""].join("\n"),
		);
		// A request-mode fetch may cost 2 credits: the second cannot fit in 3.
		const result = await runCli(
			[
				"run",
				job,
				"--out",
				join(dir, "out"),
				"--quiet",
				"--max-credits",
				"3",
				"--concurrency",
				"1",
				"--notify",
				hook.url,
			],
			{ env: service.env },
		);
		expect(result.code).toBe(1);
		expect(hook.received).toHaveLength(1);
		expect(hook.received[0]!.headers["x-scrapejob-event"]).toBe("stopped");
		expect(JSON.parse(hook.received[0]!.body)).toMatchObject({
			event: "stopped",
			complete: false,
			stopped_reason: "budget_exhausted",
			stop_message: expect.stringContaining("max_credits 3 reached"),
			targets: { by_status: { ok: 1 } },
		});
	});

	it("a notification that fails never changes the exit code; `on` filters the endings", async () => {
		const service = await useTestService();
		const broken = await receiver(404);
		const dir = tempDir();
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults:", "  mode: request", "targets:", `  - ${service.site.url}/product/1`, ""].join("\n"),
		);
		// --quiet (a cron run) still says that the hook was not reached.
		const result = await runCli(["run", job, "--out", join(dir, "out"), "--quiet", "--notify", broken.url], {
			env: service.env,
		});
		expect(result.code).toBe(0);
		expect(result.stderr).toMatch(
			/notification to http:\/\/127\.0\.0\.1:\d+ failed \(answered 404\); the run's outcome is unchanged/,
		);

		// A --notify that is not a web address is refused before anything is sent.
		const before = service.emulator.ledger.byEndpoint("realtime").length;
		const bad = await runCli(["run", job, "--out", join(dir, "out"), "--notify", "file:///etc/passwd"], {
			env: service.env,
		});
		expect(bad.code).toBe(2);
		expect(bad.stderr).toContain("--notify must be an http:// or https:// address");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(before);

		const hook = await receiver();
		const filtered = writeJob(
			dir,
			"only",
			[
				"name: only",
				"defaults:",
				"  mode: request",
				"notify:",
				`  url: ${hook.url}`,
				"  on: [failed, stopped]",
				"targets:",
				`  - ${service.site.url}/product/1`,
				"",
			].join("\n"),
		);
		expect((await runCli(["run", filtered, "--out", join(dir, "out"), "--quiet"], { env: service.env })).code).toBe(0);
		expect(hook.received).toHaveLength(0);
	});

	it("retries a receiver that answers 5xx, with backoff, a bounded number of times", async () => {
		const hook = await receiver(503);
		const waits: number[] = [];
		const warnings: string[] = [];
		const summary = {
			job: "j",
			run_id: "r",
			complete: true,
			stopped_reason: null,
			stop_message: null,
			targets: {
				total: 1,
				done: 1,
				remaining: 0,
				by_status: { ok: 1, failed: 0, skipped: 0 },
				duplicates: 0,
				skipped_rows: 0,
			},
			credits: { used: 2, by_mode: {}, remaining: null, max_credits: null },
			retries: 0,
			rate_limit_pauses: 0,
			tasks: { created: 0, completed: 0, failed: 0, left_pending: 0 },
			errors_by_kind: {},
			started_at: record("x").started_at,
			finished_at: record("x").finished_at,
			wall_ms: 1,
			throughput_per_s: 1,
			latency_ms: { p50: null, p95: null },
			concurrency: 1,
			resumed_from: null,
		};
		const sent = await notifyRunEnd({ url: hook.url, format: "slack" }, summary, "/out/j/r", {
			warn: (message) => warnings.push(message),
			sleep: async (ms) => {
				waits.push(ms);
			},
		});
		expect(sent).toBe(false);
		expect(hook.received).toHaveLength(3);
		expect(waits).toEqual([1000, 2000]);
		expect(JSON.parse(hook.received[0]!.body).text).toMatch(/scrapejob j r: 1 ok, 0 failed of 1/);
		// An open breaker is named in the Slack text, with what it parked and saved.
		await notifyRunEnd(
			{ url: hook.url, format: "slack" },
			{
				...summary,
				breakers: [
					{
						domain: "shop.test",
						reason: "8 of the last 10 charged fetches were useless",
						opened_at: "x",
						parked: 5,
						credits_saved: 5,
					},
				],
			},
			"/out/j/r",
			{ warn: () => undefined, sleep: async () => undefined },
		);
		expect(JSON.parse(hook.received.at(-1)!.body).text).toContain(
			"breaker open: shop.test (8 of the last 10 charged fetches were useless); 5 parked, 5 credits saved",
		);
		expect(warnings).toHaveLength(1);
	});
});
